package conf_test

import (
	"flag"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	_ "github.com/egret-stream/egret/catalog"
	. "github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/spi"
)

var update = flag.Bool("update", false, "rewrite REFERENCE.md")

// TestSchema checks the table itself: every default is valid for its type,
// every key belongs to a known file and backend.
func TestSchema(t *testing.T) {
	for _, k := range Schema() {
		if err := k.Validate(); err != nil {
			t.Error(err)
		}
		if !slices.Contains(Files, k.File) {
			t.Errorf("%s: file %q is not one of %v", k.Name, k.File, Files)
		}
		if strings.Contains(k.Doc, "{builtins}") {
			t.Errorf("%s: the doc's built-in list is not filled in", k.Name)
		}
		if k.Backend != "" {
			kind, name, _ := strings.Cut(k.Backend, "/")
			if !slices.Contains(Builtins(kind), name) {
				t.Errorf("%s: backend %q is not a built-in", k.Name, k.Backend)
			}
		}
		if k.Default == "" && (k.Required || k.Type == spi.KeyString || k.Type == spi.KeyList) {
			continue
		}
		v, err := ExpandDefault(k.Default)
		if err != nil {
			t.Errorf("%s: default %q: %v", k.Name, k.Default, err)
			continue
		}
		if _, err := Canonical(k.Name, v); err != nil {
			t.Errorf("%s: default %q: %v", k.Name, k.Default, err)
		}
	}
	for _, kind := range PluginNamespaceKinds() {
		if !slices.Contains(spi.Kinds, kind) {
			t.Errorf("plugin namespace of unknown kind %q", kind)
		}
	}
	if _, ok := LookupKey("EGRET.STATEMGR"); !ok {
		t.Error("LookupKey is not case-insensitive")
	}
	s := Schema()
	s[0].Name = "changed"
	if Schema()[0].Name == "changed" {
		t.Error("Schema() returns the table itself")
	}
}

func TestCanonical(t *testing.T) {
	cases := []struct {
		key, in, want, err string
	}{
		{key: "egret.config.role.required", in: "True", want: "true"},
		{key: "egret.config.role.required", in: "no", want: "false"},
		{key: "egret.nomad.mhz.per.core", in: " 2400 ", want: "2400"},
		{key: "egret.nomad.mhz.per.core", in: "-1", err: `"-1" must be greater than zero`},
		{key: "egret.stmgr.batch.max.bytes", in: "1MiB", want: "1048576"},
		{key: "egret.nomad.datacenters", in: " dc1, dc2 ,", want: "dc1,dc2"},
		{key: "egret.statemgr.session.timeout", in: "-5s", err: `"-5s" is negative`},
		{key: "egret.packing.default.instance.cpu", in: "NaN", err: `"NaN" is not a number`},
		{key: "egret.packing.default.instance.cpu", in: "0.5", want: "0.5"},
		{key: "egret.logging.max.size", in: "0", err: `"0" must be greater than zero`},
		{key: "egret.logging.max.files", in: "1.5", err: `"1.5" is not an integer`},
		{key: "egret.package.goos", in: "linx", err: `"linx" is not a GOOS (for example linux, darwin, windows) (did you mean linux?)`},
		{key: "egret.package.goarch", in: "arm64", want: "arm64"},
		{key: "egret.scheduler", in: "My Scheduler", err: "is not a backend name"},
		{key: "egret.metrics.sinks", in: "file,file", err: `sink "file" is listed twice`},
		{key: "egret.metrics.sinks", in: " tmanager ", want: "tmanager"},
		{key: "egret.metrics.sinks", in: "", want: ""},
		{key: "egret.metrics.sinks", in: "file,prometheus", want: "file,prometheus"},
		{key: "egret.metrics.sinks", in: "file,statsd", want: "file,statsd"}, // a plugin: found (or not) by FindBackend
		{key: "egret.metrics.sinks", in: "file,Stats/D", err: `"Stats/D" is not a metrics sink name: use a built-in sink (file, graphite, prometheus, tmanager) or the name of a plugin egret-metricssink-<name> (lower-case letters, digits, - and _)`},
		{key: "egret.metrics.prometheus.port", in: "65536", err: `"65536" is not a port (0 to 65535)`},
		{key: "egret.metrics.prometheus.port", in: "9091", want: "9091"},
		{key: "egret.metrics.graphite.address", in: "carbon:2003", want: "carbon:2003"},
		{key: "egret.metrics.graphite.address", in: "carbon", err: `"carbon" is not a list of host:port`},
		{key: "egret.metrics.graphite.prefix", in: "egret.prod", want: "egret.prod"},
		{key: "egret.metrics.graphite.prefix", in: "a..b", err: `"a..b" is not a Graphite path prefix`},
		{key: "egret.nomad.driver", in: "Docker", err: "allowed values: raw_exec, exec, docker"},
	}
	for _, tc := range cases {
		got, err := Canonical(tc.key, tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s=%q: %q, %v; want error %q", tc.key, tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s=%q: %q, %v; want %q", tc.key, tc.in, got, err, tc.want)
		}
	}
}

// TestReferenceUpToDate fails when REFERENCE.md differs from what the
// schema generates; run with -update to rewrite it.
func TestReferenceUpToDate(t *testing.T) {
	got := Reference()
	for _, k := range Schema() {
		if !strings.Contains(got, "`"+k.Name+"`") {
			t.Errorf("reference does not list %s", k.Name)
		}
	}
	if *update {
		if err := os.WriteFile("REFERENCE.md", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("REFERENCE.md")
	if err != nil {
		t.Fatalf("%v (run: go test ./conf -run TestReferenceUpToDate -update)", err)
	}
	if string(want) != got {
		t.Fatal("REFERENCE.md is out of date: run go test ./conf -run TestReferenceUpToDate -update")
	}
}

// TestEveryBackendKeyIsRead: a documented key that its backend never reads
// is a lie to the operator. Each built-in backend is built by its
// registered factory from a config holding every key's default (required
// keys: a value pointing nowhere), and each key it declares must have been
// looked up through spi.Config (spi.KeysRead records the lookups). The
// factories may fail to reach their systems; they read their config first.
func TestEveryBackendKeyIsRead(t *testing.T) {
	cfg := spi.Config{}
	for _, k := range Schema() {
		v, err := ExpandDefault(k.Default)
		if err != nil {
			t.Fatal(err)
		}
		if k.Required && v == "" {
			v = "127.0.0.1:1" // host:port keys
			if k.Check == nil || k.Check(v) != nil {
				v = "http://127.0.0.1:1/"
			}
		}
		cfg[k.Name] = v
	}
	cfg["egret.statemgr.root.path"] = "/egret-test"
	cfg["egret.statemgr.connection.timeout"] = "100ms"
	log := zap.NewNop()
	build := map[string]func(name string, cfg spi.Config) (io.Closer, error){
		spi.KindScheduler: func(n string, cfg spi.Config) (io.Closer, error) {
			f, err := spi.LookupScheduler(n)
			if err != nil {
				return nil, err
			}
			return f(cfg, log)
		},
		spi.KindStateManager: func(n string, cfg spi.Config) (io.Closer, error) {
			f, err := spi.LookupStateManager(n)
			if err != nil {
				return nil, err
			}
			return f(cfg, log)
		},
		spi.KindUploader: func(n string, cfg spi.Config) (io.Closer, error) {
			f, err := spi.LookupUploader(n)
			if err != nil {
				return nil, err
			}
			return f(cfg, log)
		},
		spi.KindCheckpointStorage: func(n string, cfg spi.Config) (io.Closer, error) {
			f, err := spi.LookupCheckpointStorage(n)
			if err != nil {
				return nil, err
			}
			return f(cfg, log)
		},
	}
	for _, kind := range spi.Kinds {
		for _, name := range Builtins(kind) {
			keys, _ := spi.BackendKeys(kind, name)
			if len(keys) == 0 {
				continue
			}
			b, ok := build[kind]
			if !ok {
				continue // the metrics sinks: TestEveryCoreKeyIsRead
			}
			c := cfg.Clone()
			c["egret."+map[string]string{spi.KindCheckpointStorage: "checkpoint.storage"}[kind]] = name
			if be, err := b(name, c); err == nil && be != nil {
				_ = be.Close()
			} else {
				t.Logf("%s %s: %v", kind, name, err)
			}
			read := spi.KeysRead()
			for _, k := range keys {
				if !slices.Contains(read, k.Name) {
					t.Errorf("%s %s documents %s but does not read it: implement it or remove it from its keys", spi.KindNoun(kind), name, k.Name)
				}
			}
		}
	}
}
