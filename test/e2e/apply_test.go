package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// applyManifest writes a manifest of ackcheck topologies: name → extra
// YAML lines of the entry.
func applyManifest(t *testing.T, c *cluster, file string, entries map[string]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("topologies:\n")
	for _, name := range []string{"app-a", "app-b", "app-c"} {
		extra, ok := entries[name]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "  - name: %s\n    cluster: %s\n    binary: %s\n    args: [--name, %s, --messages, \"0\", --rate, \"50\", --state, %s, --containers, \"1\"]\n%s",
			name, c.name, binary(t, "ackcheck"), name, filepath.Join(c.home, "state-"+name), extra)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

type applyResult struct {
	Steps []struct {
		Topology, Action, Status, Detail, Error string
	}
	Failed int
}

func (c *cluster) apply(t *testing.T, args ...string) applyResult {
	t.Helper()
	out := c.mustEgret(append([]string{"apply", "-o", "json"}, args...)...)
	var r applyResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("apply output: %v\n%s", err, out)
	}
	return r
}

func (r applyResult) actions() map[string]string {
	out := map[string]string{}
	for _, s := range r.Steps {
		out[s.Topology] = s.Action + "/" + s.Status
	}
	return out
}

func sameActions(t *testing.T, what string, got applyResult, want map[string]string) {
	t.Helper()
	a := got.actions()
	if len(a) != len(want) {
		t.Fatalf("%s: steps %v, want %v", what, a, want)
	}
	for k, v := range want {
		if a[k] != v {
			t.Fatalf("%s: steps %v, want %v", what, a, want)
		}
	}
}

// TestApplyManifest: egret apply creates what a manifest lists, changes
// nothing the second time, scales and prunes for a changed manifest, and
// refuses a bad manifest with its position before doing anything.
func TestApplyManifest(t *testing.T) {
	c := newCluster(t, "local")
	dir := t.TempDir()
	file := filepath.Join(dir, "topologies.yaml")
	applyManifest(t, c, file, map[string]string{"app-a": "", "app-b": "    parallelism: {relay: 2}\n", "app-c": ""})

	sameActions(t, "dry run", c.apply(t, "-f", file, "--dry-run"),
		map[string]string{"app-a": "create/planned", "app-b": "create/planned", "app-c": "create/planned"})
	if out := c.mustEgret("list", c.name); strings.Contains(out, "app-") {
		t.Fatalf("a dry run submitted:\n%s", out)
	}

	sameActions(t, "first apply", c.apply(t, "-f", file, "--parallel", "2"),
		map[string]string{"app-a": "create/ok", "app-b": "create/ok", "app-c": "create/ok"})
	relays := func(name string) int {
		pp, _, err := c.store().PackingPlan(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ct := range pp.Containers {
			for _, in := range ct.Instances {
				if in.Component == "relay" {
					n++
				}
			}
		}
		return n
	}
	if n := relays("app-b"); n != 2 {
		t.Fatalf("app-b has %d relay tasks, want the manifest's 2", n)
	}

	sameActions(t, "second apply", c.apply(t, "-f", file),
		map[string]string{"app-a": "unchanged/ok", "app-b": "unchanged/ok", "app-c": "unchanged/ok"})

	// app-c leaves the manifest, app-b scales up.
	applyManifest(t, c, file, map[string]string{"app-a": "", "app-b": "    parallelism: {relay: 3}\n"})
	sameActions(t, "changed manifest without --prune", c.apply(t, "-f", file, "--dry-run"),
		map[string]string{"app-a": "unchanged/planned", "app-b": "update/planned"})
	r := c.apply(t, "-f", file, "--prune")
	sameActions(t, "changed manifest", r, map[string]string{"app-a": "unchanged/ok", "app-b": "update/ok", "app-c": "kill/ok"})
	if n := relays("app-b"); n != 3 {
		t.Fatalf("app-b has %d relay tasks after the update, want 3", n)
	}
	if out := c.mustEgret("list", c.name); strings.Contains(out, "app-c") || !strings.Contains(out, "app-a") {
		t.Fatalf("after the prune:\n%s", out)
	}

	// A bad manifest: exit 2 naming file and line, nothing done.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("topologies:\n  - name: app-d\n    cluster: "+c.name+"\n    binary: ./x\n    replicas: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := c.egret("apply", "-f", bad); code != 2 || !strings.Contains(stderr, bad+`:5: unknown key "replicas"`) {
		t.Fatalf("bad manifest: exit %d, %q", code, stderr)
	}
	// A binary that defines another name than listed: the step fails, nothing runs.
	wrong := filepath.Join(dir, "wrong.yaml")
	if err := os.WriteFile(wrong, []byte("topologies:\n  - name: app-e\n    cluster: "+c.name+"\n    binary: "+binary(t, "wordcount")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, code := c.egret("apply", "-f", wrong); code != 1 || !strings.Contains(out, `defines topology "wordcount", not "app-e"`) {
		t.Fatalf("a binary of another name: exit %d\n%s", code, out)
	}
	if out := c.mustEgret("list", c.name); strings.Contains(out, "wordcount") {
		t.Fatalf("the misnamed binary was submitted:\n%s", out)
	}
	c.killAll()
	c.waitGone(t)
}
