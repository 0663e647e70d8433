package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	ts, err := Parse("/m/t.yaml", []byte(`topologies:
  - name: orders
    cluster: prod/etl
    binary: ./cmd/orders
    args: [--rate, "500"]
    config: {egret.metrics.sinks: "file,prometheus", egret.kill.drain.timeout: 10s}
    parallelism: {enrich: 4, sink: 2}
    containers: 3
  - name: clicks
    cluster: local
    binary: /opt/clicks
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 {
		t.Fatalf("%d topologies", len(ts))
	}
	o := ts[0]
	if o.Name != "orders" || o.Cluster != "prod/etl" || o.Binary != "/m/cmd/orders" || strings.Join(o.Args, " ") != "--rate 500" ||
		strings.Join(o.Config, " ") != "egret.kill.drain.timeout=10s egret.metrics.sinks=file,prometheus" ||
		o.Parallelism["enrich"] != 4 || o.Parallelism["sink"] != 2 || o.Containers != 3 || o.Where() != "/m/t.yaml:2" {
		t.Errorf("orders: %+v", o)
	}
	if ts[1].Binary != "/opt/clicks" || ts[1].Line != 9 {
		t.Errorf("clicks: %+v", ts[1])
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"", "t.yaml: empty manifest"},
		{"- a\n", "t.yaml:1: a manifest is a mapping"},
		{"tops: []\n", `t.yaml:1: unknown key "tops"`},
		{"topologies: {a: 1}\n", "t.yaml:1: topologies must be a list"},
		{"topologies:\n  - name: a\n    cluster: local\n", "t.yaml:2: the topology lacks binary"},
		{"topologies:\n  - name: ../x\n    cluster: local\n    binary: b\n", "t.yaml:2: name:"},
		{"topologies:\n  - name: a\n    cluster: local/../r\n    binary: b\n", "t.yaml:3: cluster:"},
		{"topologies:\n  - name: a\n    cluster: local\n    binary: b\n    replicas: 2\n", `t.yaml:5: unknown key "replicas"`},
		{"topologies:\n  - name: a\n    cluster: local\n    binary: b\n    containers: 0\n", `t.yaml:5: containers: "0" is not a positive integer`},
		{"topologies:\n  - name: a\n    cluster: local\n    binary: b\n    parallelism: {split: x}\n", `t.yaml:5: parallelism of split: "x" is not a positive integer`},
		{"topologies:\n  - name: a\n    cluster: local\n    binary: b\n    config: {metrics.sinks: file}\n", `t.yaml:5: config key "metrics.sinks": Egret keys start with egret.`},
		{"topologies:\n  - name: a\n    cluster: local\n    binary: b\n    args: [x, [y]]\n", "t.yaml:5: args must be a list of strings"},
		{"topologies: [\n", "t.yaml: "},
	} {
		_, err := Parse("t.yaml", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.doc, err, tc.want)
		}
	}
}

func TestLoadDirectoryAndDuplicates(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "topologies:\n  - {name: x, cluster: local, binary: b}\n")
	write("b.yml", "topologies:\n  - {name: y, cluster: local, binary: b}\n")
	write("notes.txt", "not a manifest")
	ts, err := Load(dir)
	if err != nil || len(ts) != 2 || ts[0].Name != "x" || ts[1].Name != "y" {
		t.Fatalf("Load(dir) = %+v, %v", ts, err)
	}
	write("c.yaml", "topologies:\n  - {name: x, cluster: local, binary: other}\n")
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "c.yaml:2: topology \"x\" of local is already listed at "+filepath.Join(dir, "a.yaml")+":2") {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no .yaml or .yml manifest") {
		t.Fatalf("empty directory: %v", err)
	}
}
