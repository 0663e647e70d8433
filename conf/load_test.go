package conf_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/egret-stream/egret/catalog"
	. "github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/names"
)

var testEnv = map[string]string{"HOME": "/home/u", "USER": "u", "LOOP_A": "${LOOP_B}", "LOOP_B": "x/${LOOP_A}"}

func testdata(t *testing.T, sub string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", sub))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestProblems loads the bad configurations in testdata/bad and asserts
// the exact problem lines ({dir} is the testdata directory of the case).
func TestProblems(t *testing.T) {
	cases := []struct {
		dir, cluster string
		role, env    string
		overrides    []string
		want         []string
	}{
		{
			dir: "bad/types", cluster: "nomad",
			overrides: []string{"egret.packing=spiral", "nokey", "=x", "egret.uploader.http.uri=ftp://x", "egret.bad key=1",
				"egret.nomad.metrics.service.register=", "egret.nomad.region="},
			want: []string{
				`{dir}/nomad/scheduler.yaml:1: egret.nomad.tls.skip.verify: "maybe" is not a boolean (use true or false)`,
				`{dir}/nomad/scheduler.yaml:2: egret.nomad.mhz.per.core: "fast" is not an integer`,
				`{dir}/nomad/scheduler.yaml:3: egret.nomad.driver: "podman" is not one of the allowed values: raw_exec, exec, docker`,
				`{dir}/nomad/scheduler.yaml:4: egret.nomad.adress: unknown key of the built-in nomad scheduler; did you mean egret.nomad.address?`,
				`{dir}/nomad/scheduler.yaml:5: egret.nomad.datacenters: a list may hold only plain values (strings, numbers, booleans)`,
				`{dir}/nomad/scheduler.yaml:6: egret.nomad.address: "nomad.example:4646" is not an http:// or https:// URL`,
				`{dir}/nomad/statemgr.yaml:2: egret.statemgr.session.timeout: "abc" is not a duration (for example 500ms, 30s, 2m)`,
				`{dir}/nomad/statemgr.yaml:3: egret.statemgr.rot.path: unknown key; did you mean egret.statemgr.root.path?`,
				`{dir}/nomad/statemgr.yaml:5: egret.statemgr.consul.address: unknown key (no built-in or selected backend reads it); did you mean egret.statemgr.root.path?`,
				`{dir}/nomad/statemgr.yaml:6: egret.statemgr.connection.string: "zk1:2181,zk2" is not a list of host:port (item "zk2")`,
				`{dir}/nomad/statemgr.yaml:7: egret.statemgr.connection.timeout: "2.5" is not a duration (for example 500ms, 30s, 2m)`,
				`{dir}/nomad/internals.yaml:3: egret.stmgr.buffer.high.watermark.bytes: "10XB" is not a size in bytes (for example 1048576, 64KiB, 100MiB, 2GiB)`,
				`{dir}/nomad/internals.yaml:5: egret.stmgr.batch.max.bytes: "0" must be greater than zero`,
				`{dir}/nomad/internals.yaml:6: egret.executor.restart.backoff.initial: "2m" must be at most egret.executor.restart.backoff.max ("1m")`,
				`{dir}/nomad/internals.yaml:7: egret.stmgr.heartbeat.interval: "10" is not a duration (for example 500ms, 30s, 2m)`,
				`{dir}/nomad/internals.yaml:8: egret.tmanager.heartbeat.timout: unknown key; did you mean egret.tmanager.heartbeat.timeout?`,
				`{dir}/nomad/internals.yaml:9: heron.statemgr.root.path: unknown key (Egret keys start with egret.); did you mean egret.statemgr.root.path?`,
				`--config-property: "nokey" is not key=value`,
				`--config-property: "=x" has an empty key; expected key=value`,
				`--config-property: "egret.bad key=1": "egret.bad key" is not a dotted key`,
				`--config-property: egret.nomad.metrics.service.register: empty value; expected true or false`,
				`--config-property: egret.packing: no packing "spiral" here`,
				`--config-property: egret.uploader.http.uri: "ftp://x" is not an http:// or https:// URL`,
			},
		},
		{
			dir: "bad/syntax", cluster: "local",
			want: []string{
				`{dir}/local/client.yaml:1: egret.config.role.required: set twice in this file (once as a flat dotted key, once as nested maps); keep one`,
				`{dir}/local/scheduler.yaml:3: YAML syntax error: mapping values are not allowed in this context`,
				`{dir}/local/packing.yaml:1: egret.packing: no packing "spiral" here`,
				`{dir}/local/packing.yaml:2: egret.packing.padding.percentage: "150" is not a percentage between 0 and 100`,
				`{dir}/local/uploader.yaml:2: YAML syntax error: mapping key "egret.uploader" already defined at line 1`,
			},
		},
		{
			dir: "bad/filename", cluster: "local",
			want: []string{
				`{dir}/local/schedular.yaml: unknown config file: expected client.yaml, scheduler.yaml, packing.yaml, statemgr.yaml, uploader.yaml, internals.yaml, metrics_sinks.yaml (did you mean scheduler.yaml?)`,
				`{dir}/local/statemgr.yml: unknown config file: expected client.yaml, scheduler.yaml, packing.yaml, statemgr.yaml, uploader.yaml, internals.yaml, metrics_sinks.yaml (did you mean statemgr.yaml?)`,
			},
		},
		{
			dir: "bad/missing", cluster: "bare",
			want: []string{
				`{dir}/bare/metrics_sinks.yaml:1: egret.metrics.sinks: no metricssink "prometeus" here (did you mean prometheus?)`,
				`egret.statemgr.connection.string: required by the zookeeper state manager; set it in statemgr.yaml of cluster bare`,
				`egret.statemgr.root.path: required key is missing; set it in statemgr.yaml of cluster bare`,
				`egret.uploader.http.uri: required by the http uploader; set it in uploader.yaml of cluster bare`,
			},
		},
		{
			dir: "bad/subst", cluster: "local",
			want: []string{
				`{dir}/local/client.yaml:1: egret.plugin.directory: invalid variable name ${1BAD} (use letters, digits and _)`,
				`{dir}/local/scheduler.yaml:1: egret.scheduler.local.working.directory: variable cycle: ${LOOP_A} -> ${LOOP_B} -> ${LOOP_A}`,
				`{dir}/local/statemgr.yaml:1: egret.statemgr.root.path: unknown variable ${NOPE}: not one of ${EGRET_HOME}, ${CLUSTER}, ${ROLE}, ${ENVIRON}, ${TOPOLOGY}, ${HOME} and not set in the environment (use ${NOPE:-default} for a fallback)`,
				`{dir}/local/uploader.yaml:1: egret.uploader.localfs.directory: unterminated ${ in "${EGRET_HOME/packages" (close it with }, or write $$ for a literal $)`,
			},
		},
		{
			dir: "good/nested", cluster: "strict", role: "www",
			want: []string{
				`{dir}/strict/client.yaml:3: egret.config.env.required: cluster strict requires an environment: give strict/<role>/<environ>`,
			},
		},
		{
			dir: "good/nested", cluster: "strict",
			want: []string{
				`{dir}/strict/client.yaml:2: egret.config.role.required: cluster strict requires a role: give strict/<role>/<environ>`,
				`{dir}/strict/client.yaml:3: egret.config.env.required: cluster strict requires an environment: give strict/<role>/<environ>`,
			},
		},
		{
			dir: "good/nested", cluster: "local", overrides: []string{"egret.metrics.sinks=file,graphite"},
			want: []string{`--config-property: egret.metrics.sinks: the graphite sink needs egret.metrics.graphite.address, the host:port of a carbon line receiver`},
		},
		{
			dir: "good/nested", cluster: "local", role: "../etc",
			want: []string{`role "../etc" is invalid: a role must start with a letter or digit and contain only letters, digits, '.', '-' and '_' (ASCII, at most 63 characters)`},
		},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.dir, "/", "_")+"_"+tc.cluster, func(t *testing.T) {
			dir := testdata(t, tc.dir)
			_, err := Load(LoadOptions{Cluster: tc.cluster, Role: tc.role, Environ: tc.env, ConfigPath: dir,
				Overrides: tc.overrides, LookupEnv: EnvOf(testEnv), FindBackend: findBuiltin})
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Load: got %v, want a *ValidationError", err)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("errors.Is(err, ErrInvalidConfig) = false")
			}
			if ve.Cluster != tc.cluster {
				t.Errorf("Cluster = %q, want %q", ve.Cluster, tc.cluster)
			}
			got := strings.Split(err.Error(), "\n")
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = strings.ReplaceAll(w, "{dir}", dir)
			}
			if !slices.Equal(got, want) {
				t.Errorf("problems:\n got:\n  %s\n want:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			if len(ve.Problems) != len(want) {
				t.Errorf("%d problems, want %d", len(ve.Problems), len(want))
			}
			// Validate reports the same.
			verr := Validate(LoadOptions{Cluster: tc.cluster, Role: tc.role, Environ: tc.env, ConfigPath: dir,
				Overrides: tc.overrides, LookupEnv: EnvOf(testEnv), FindBackend: findBuiltin})
			if verr == nil || verr.Error() != err.Error() {
				t.Errorf("Validate = %v, want the same problems as Load", verr)
			}
		})
	}
}

// TestEmbeddedClusters loads every embedded cluster with no operator files
// and checks the backends it selects.
func TestEmbeddedClusters(t *testing.T) {
	want := map[string][4]string{ // scheduler, statemgr, uploader, sinks
		"local":      {"local", "localfs", "localfs", "file,tmanager"},
		"localzk":    {"local", "zookeeper", "localfs", "file,tmanager"},
		"mesos":      {"mesos", "zookeeper", "http", "file,tmanager"},
		"nomad":      {"nomad", "zookeeper", "http", "file,tmanager"},
		"aurora":     {"aurora", "zookeeper", "http", "file,tmanager"},
		"slurm":      {"slurm", "zookeeper", "localfs", "file,tmanager"},
		"yarn":       {"yarn", "zookeeper", "hdfs", "file,tmanager"},
		"kubernetes": {"kubernetes", "zookeeper", "http", "file,tmanager"},
	}
	empty := t.TempDir()
	got := Clusters(empty)
	if len(got) != len(want) {
		t.Errorf("Clusters = %v, want the %d embedded clusters", got, len(want))
	}
	for _, name := range got {
		w, ok := want[name]
		if !ok {
			t.Errorf("unexpected embedded cluster %q", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			// Every backend an embedded cluster selects is built in.
			opts := LoadOptions{Cluster: name, ConfigPath: empty, LookupEnv: EnvOf(testEnv), FindBackend: findBuiltin}
			if name == "aurora" { // its jobs are keyed by role and environment
				opts.Role, opts.Environ = "www", "prod"
			}
			if err := Validate(opts); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			c, err := Load(opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			cfg := c.Config()
			g := [4]string{cfg["egret.scheduler"], cfg["egret.statemgr"], cfg["egret.uploader"], cfg["egret.metrics.sinks"]}
			if g != w {
				t.Errorf("scheduler, statemgr, uploader, sinks = %v, want %v", g, w)
			}
			for _, k := range cfg.Keys() {
				if strings.Contains(cfg[k], "${") && !strings.Contains(cfg[k], "${TOPOLOGY}") {
					t.Errorf("%s = %q: unsubstituted variable", k, cfg[k])
				}
				if o := c.Origin(k); o == "" {
					t.Errorf("%s has no origin", k)
				}
			}
			// Every key an embedded file sets is a schema key (embedded
			// defaults never rely on plugin pass-through).
			for _, f := range c.Sources() {
				if !strings.HasPrefix(f, "embedded:clusters/"+name+"/") {
					t.Errorf("source %q of an embedded-only load", f)
				}
			}
			for _, k := range cfg.Keys() {
				if _, ok := LookupKey(k); !ok {
					t.Errorf("embedded key %s is not in the schema", k)
				}
			}
			if len(c.Sources()) != len(Files) {
				t.Errorf("sources %v, want all %d files", c.Sources(), len(Files))
			}
		})
	}
}

func TestLocalResolvedValues(t *testing.T) {
	c, err := Load(LoadOptions{Cluster: "local", Topology: "wordcount", ConfigPath: t.TempDir(), LookupEnv: EnvOf(testEnv)})
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "local" || c.Role != "u" || c.Environ != "default" || c.Topology != "wordcount" {
		t.Errorf("Name/Role/Environ/Topology = %q/%q/%q/%q", c.Name, c.Role, c.Environ, c.Topology)
	}
	checks := map[string]string{
		"egret.statemgr.root.path":                "/home/u/.egret/state/local",
		"egret.scheduler.local.working.directory": "/home/u/.egret/topologies/local/u/wordcount",
		"egret.uploader.localfs.directory":        "/home/u/.egret/repository/topologies/local/u/wordcount",
		"egret.stmgr.batch.max.bytes":             "65536",
		"egret.packing.default.instance.ram":      "1073741824",
		"egret.logging.max.size":                  "104857600",
	}
	cfg := c.Config()
	for k, want := range checks {
		if cfg[k] != want {
			t.Errorf("%s = %q, want %q", k, cfg[k], want)
		}
	}
	// Keys of backends that are not selected get no defaults.
	for _, k := range []string{"egret.nomad.address", "egret.statemgr.connection.string", "egret.uploader.http.timeout"} {
		if v, ok := cfg[k]; ok {
			t.Errorf("%s = %q is set for the local cluster", k, v)
		}
	}
	// Config returns a copy.
	cfg["egret.scheduler"] = "changed"
	if c.String("egret.scheduler") != "local" {
		t.Error("changing Config() changed the cluster")
	}
	// Typed getters.
	if n, err := c.Bytes("egret.stmgr.buffer.high.watermark.bytes"); err != nil || n != 1<<20 {
		t.Errorf("Bytes = %d, %v", n, err)
	}
	if d, err := c.Duration("egret.executor.restart.backoff.max"); err != nil || d.Minutes() != 1 {
		t.Errorf("Duration = %v, %v", d, err)
	}
	if b, err := c.Bool("egret.config.role.required"); err != nil || b {
		t.Errorf("Bool = %v, %v", b, err)
	}
	if f, err := c.Float("egret.packing.default.instance.cpu"); err != nil || f != 1 {
		t.Errorf("Float = %v, %v", f, err)
	}
	if n, err := c.Int("egret.packing.padding.percentage"); err != nil || n != 10 {
		t.Errorf("Int = %v, %v", n, err)
	}
	if l := c.List("egret.metrics.sinks"); !slices.Equal(l, []string{"file", "tmanager"}) {
		t.Errorf("List = %v", l)
	}
	if _, err := c.Int("egret.nomad.mhz.per.core"); err == nil || !strings.Contains(err.Error(), "not set") {
		t.Errorf("Int of an unset key: %v", err)
	}
	if _, err := c.Int("egret.statemgr.root.path"); err == nil {
		t.Error("Int of a path: no error")
	}
	if c.Origin("egret.statemgr") != "embedded:clusters/local/statemgr.yaml" {
		t.Errorf("Origin = %q", c.Origin("egret.statemgr"))
	}
}

func TestOverridesWin(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"local/statemgr.yaml": "egret.statemgr.root.path: /from/user\negret.statemgr.localfs.poll.interval: 1s\n",
		"local/packing.yaml":  "egret.packing: ffd\n",
	})
	c, err := Load(LoadOptions{Cluster: "local", ConfigPath: dir, LookupEnv: EnvOf(testEnv),
		Overrides: []string{"egret.statemgr.root.path=/from/flag", "EGRET.PACKING=rcrr", "egret.packing=roundrobin",
			"egret.plugin.directory=a=b"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ key, value, origin string }{
		{"egret.statemgr.root.path", "/from/flag", OriginProperty},
		{"egret.statemgr.localfs.poll.interval", "1s", filepath.Join(dir, "local", "statemgr.yaml")},
		{"egret.packing", "roundrobin", OriginProperty}, // the last override wins
		{"egret.statemgr", "localfs", "embedded:clusters/local/statemgr.yaml"},
		{"egret.plugin.directory", "a=b", OriginProperty}, // the value may hold =
	}
	for _, tc := range cases {
		if v := c.String(tc.key); v != tc.value {
			t.Errorf("%s = %q, want %q", tc.key, v, tc.value)
		}
		if o := c.Origin(tc.key); o != tc.origin {
			t.Errorf("Origin(%s) = %q, want %q", tc.key, o, tc.origin)
		}
	}
	wantSources := []string{
		"embedded:clusters/local/client.yaml", "embedded:clusters/local/scheduler.yaml", "embedded:clusters/local/packing.yaml",
		"embedded:clusters/local/statemgr.yaml", "embedded:clusters/local/uploader.yaml", "embedded:clusters/local/internals.yaml",
		"embedded:clusters/local/metrics_sinks.yaml", filepath.Join(dir, "local", "packing.yaml"), filepath.Join(dir, "local", "statemgr.yaml"),
	}
	if !slices.Equal(c.Sources(), wantSources) {
		t.Errorf("Sources = %v", c.Sources())
	}
}

func TestNestedYAML(t *testing.T) {
	dir := testdata(t, "good/nested")
	c, err := Load(LoadOptions{Cluster: "local", ConfigPath: dir, LookupEnv: EnvOf(testEnv)})
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"egret.statemgr.root.path":             "/home/u/nested-state/local",
		"egret.statemgr.localfs.poll.interval": "500ms",
		"egret.plugin.directory":               "${NOT_EXPANDED}/plugins", // $$ escape
		"egret.package.core.uri":               "file:///opt/egret/egret", // ${X:-fallback}
		"egret.packing":                        "ffd",
		"egret.packing.default.instance.ram":   "536870912",
	}
	for k, want := range checks {
		if v := c.String(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	if o := c.Origin("egret.statemgr.localfs.poll.interval"); o != filepath.Join(dir, "local", "statemgr.yaml") {
		t.Errorf("Origin = %q", o)
	}
	env := map[string]string{"HOME": "/h", "USER": "u", "CORE_URI": "http://core"}
	c, err = Load(LoadOptions{Cluster: "local", ConfigPath: dir, LookupEnv: EnvOf(env)})
	if err != nil {
		t.Fatal(err)
	}
	if v := c.String("egret.package.core.uri"); v != "http://core" {
		t.Errorf("core uri = %q, want the environment's", v)
	}
}

func TestUserOnlyCluster(t *testing.T) {
	dir := testdata(t, "good/edge")
	if cl := Clusters(dir); !slices.Contains(cl, "edge") || !slices.Contains(cl, "local") {
		t.Errorf("Clusters = %v, want edge and the embedded ones", cl)
	}
	c, err := Load(LoadOptions{Cluster: "edge", Role: "ops", Environ: "prod", ConfigPath: dir, EgretHome: "/opt/egret", LookupEnv: EnvOf(testEnv)})
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"egret.scheduler":                  "slurmx",
		"egret.slurmx.partition":           "batch",
		"egret.scheduler.slurmx.qos":       "high",
		"egret.statemgr.root.path":         "/opt/egret/state/edge/prod",
		"egret.uploader.localfs.directory": "/opt/egret/repository/topologies/edge/ops/${TOPOLOGY}", // schema default
		"egret.packing":                    "roundrobin",                                            // schema default
		"egret.stmgr.batch.max.bytes":      "65536",
	}
	for k, want := range checks {
		if v := c.String(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	if o := c.Origin("egret.packing"); o != OriginDefault {
		t.Errorf("Origin(egret.packing) = %q, want %q", o, OriginDefault)
	}
	c2, err := c.WithTopology("wc")
	if err != nil {
		t.Fatal(err)
	}
	if v := c2.String("egret.uploader.localfs.directory"); v != "/opt/egret/repository/topologies/edge/ops/wc" {
		t.Errorf("WithTopology: %q", v)
	}
	if c2.Role != "ops" || c2.Environ != "prod" || c2.Topology != "wc" {
		t.Errorf("WithTopology: role/env/topology %q/%q/%q", c2.Role, c2.Environ, c2.Topology)
	}
}

func TestUnknownCluster(t *testing.T) {
	dir := testdata(t, "good/edge")
	_, err := Load(LoadOptions{Cluster: "nomda", ConfigPath: dir, LookupEnv: EnvOf(testEnv)})
	if !errors.Is(err, ErrUnknownCluster) {
		t.Fatalf("got %v, want ErrUnknownCluster", err)
	}
	for _, s := range []string{`"nomda"`, "edge, kubernetes, local, localzk, mesos, nomad, slurm, yarn;", filepath.Join(dir, "nomda")} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	for _, bad := range []string{"", "../local", "a/b", ".hidden"} {
		if _, err := Load(LoadOptions{Cluster: bad, ConfigPath: dir, LookupEnv: EnvOf(testEnv)}); err == nil {
			t.Errorf("cluster %q: no error", bad)
		}
	}
}

func TestRoleEnv(t *testing.T) {
	dir := t.TempDir()
	// Defaults: role $USER, environ "default".
	c, err := Load(LoadOptions{Cluster: "local", ConfigPath: dir, LookupEnv: EnvOf(map[string]string{"HOME": "/h", "USER": "alice"})})
	if err != nil {
		t.Fatal(err)
	}
	if c.Role != "alice" || c.Environ != "default" {
		t.Errorf("role/env = %q/%q", c.Role, c.Environ)
	}
	c, err = Load(LoadOptions{Cluster: "local", ConfigPath: dir, LookupEnv: EnvOf(map[string]string{"HOME": "/h", "LOGNAME": "bob"})})
	if err != nil || c.Role != "bob" {
		t.Errorf("LOGNAME fallback: %v, %v", c, err)
	}
	// Required by an operator file and by an override.
	writeFiles(t, dir, map[string]string{"local/client.yaml": "egret.config.role.required: true\n"})
	_, err = Load(LoadOptions{Cluster: "local", ConfigPath: dir, LookupEnv: EnvOf(testEnv)})
	want := filepath.Join(dir, "local", "client.yaml") + ":1: egret.config.role.required: cluster local requires a role: give local/<role>/<environ>"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	_, err = Load(LoadOptions{Cluster: "local", Role: "r", ConfigPath: dir, LookupEnv: EnvOf(testEnv), Overrides: []string{"egret.config.env.required=true"}})
	want = "--config-property: egret.config.env.required: cluster local requires an environment: give local/<role>/<environ>"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	c, err = Load(LoadOptions{Cluster: "local", Role: "r", Environ: "e", ConfigPath: dir, LookupEnv: EnvOf(testEnv), Overrides: []string{"egret.config.env.required=true"}})
	if err != nil || c.Role != "r" || c.Environ != "e" {
		t.Errorf("role and env given: %v", err)
	}
	// A user name that is not a valid role (it becomes part of paths).
	for _, user := range []string{"..", "../x", "a/b", "a b", "\uff0e\uff0e"} {
		_, err = Load(LoadOptions{Cluster: "local", ConfigPath: t.TempDir(), LookupEnv: EnvOf(map[string]string{"HOME": "/h", "USER": user})})
		if err == nil || !strings.Contains(err.Error(), "the user name is not a valid role") || !strings.Contains(err.Error(), "give local/<role>") {
			t.Errorf("USER=%q: got %v, want a problem naming the role rule", user, err)
		}
	}
	// No role and no $USER.
	_, err = Load(LoadOptions{Cluster: "localzk", ConfigPath: t.TempDir(), LookupEnv: EnvOf(map[string]string{"HOME": "/h"})})
	if err == nil || err.Error() != "no role given and $USER is not set: give localzk/<role>" {
		t.Errorf("got %v", err)
	}
}

func TestHomeAndEgretHome(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(LoadOptions{Cluster: "local", ConfigPath: dir, LookupEnv: EnvOf(map[string]string{"HOME": "/h", "USER": "u", "EGRET_HOME": "${HOME}/egret-home"})})
	if err != nil {
		t.Fatal(err)
	}
	if v := c.String("egret.statemgr.root.path"); v != "/h/egret-home/state/local" {
		t.Errorf("EGRET_HOME from the environment, expanded: %q", v)
	}
	// No HOME at all: ${EGRET_HOME} defaults to ${HOME}/.egret, which is unknown.
	_, err = Load(LoadOptions{Cluster: "local", ConfigPath: dir, LookupEnv: EnvOf(map[string]string{"USER": "u"})})
	if err == nil || !strings.Contains(err.Error(), "egret.statemgr.root.path: unknown variable ${HOME}") {
		t.Errorf("got %v", err)
	}
	// The default config path is $HOME/.egret/conf.
	home := t.TempDir()
	writeFiles(t, home, map[string]string{".egret/conf/local/packing.yaml": "egret.packing: rcrr\n"})
	c, err = Load(LoadOptions{Cluster: "local", LookupEnv: EnvOf(map[string]string{"HOME": home, "USER": "u"})})
	if err != nil || c.String("egret.packing") != "rcrr" {
		t.Errorf("default config path: %v, %v", err, c)
	}
	c, err = Load(LoadOptions{Cluster: "local", ConfigPath: "~/.egret/conf", LookupEnv: EnvOf(map[string]string{"HOME": home, "USER": "u"})})
	if err != nil || c.String("egret.packing") != "rcrr" {
		t.Errorf("~/ config path: %v, %v", err, c)
	}
}

func TestUnknownKeys(t *testing.T) {
	const notRead = "unknown key (no built-in or selected backend reads it); did you mean "
	cases := []struct {
		key  string
		want string // "" = passes through
	}{
		// Keys of external plugins pass only when the config selects the
		// plugin (and it declares no keys: TestPluginKeys).
		{"egret.statemgr.consul.address", notRead + "egret.statemgr.root.path?"},
		{"egret.uploader.gcs.bucket", notRead + "egret.uploader.hdfs.user?"},
		{"egret.metrics.sink.kafka.brokers", "no longer a key: the file sink always writes metrics.jsonl in the container's working directory and the tmanager sink forwards every report at once; delete it"},
		{"egret.packing.custom.weight", notRead + "egret.packing.padding.disk?"},
		{"egret.lsf.queue", notRead + "egret.yarn.queue?"},
		{"egret.scheduler.marathon.uri", notRead + "egret.scheduler?"},
		{"egret.no.such.key", notRead + "egret.nomad.token?"},
		{"egret.statemgr.rot.path", "unknown key; did you mean egret.statemgr.root.path?"},
		{"egret.statemgr.root", "unknown key; did you mean egret.statemgr.root.path?"},
		{"egret.statemgr.foo", notRead + "egret.statemgr?"},
		{"egret.lsf.queue.name", notRead + "egret.aurora.username?"},
		{"egret.slurm.queue", "unknown key of the built-in slurm scheduler; did you mean egret.slurm.squeue?"},
		{"egret.uploader.http.url", "unknown key of the built-in http uploader; did you mean egret.uploader.http.uri?"},
		{"egret.statemgr.localfs.root", "unknown key of the built-in localfs state manager; did you mean egret.statemgr.localfs.poll.interval?"},
		{"egret.stmgr.buffer.high.watermark", "unknown key; did you mean egret.stmgr.buffer.high.watermark.bytes?"},
		{"egret.scheduler.local.dir", "unknown key of the built-in local scheduler; its keys are egret.scheduler.local.egret.binary, egret.scheduler.local.working.directory"},
		{"egret.scheduler.is.service", "no longer a key: the scheduler decides whether it runs as a service (local) or inside the CLI (nomad); delete it"},
		{"egret.statemgr.retry.count", "no longer a key: the zookeeper state manager retries a repeatable operation after a connection loss until the command's deadline, with its own backoff; delete it"},
		{"egret.statemgr.retryx.count", notRead + "egret.statemgr.root.path?"},
		{"egret.logging.max.sise", "unknown key; did you mean egret.logging.max.size?"},
		{"egret", "unknown key (Egret keys start with egret.)"},
		{"egret.nomad.metrics.service.check.intervall", "unknown key of the built-in nomad scheduler; did you mean egret.nomad.metrics.service.check.interval?"},
		{"topology.stmgrs", "unknown key (Egret keys start with egret.)"},
	}
	for _, tc := range cases {
		_, err := Load(LoadOptions{Cluster: "local", ConfigPath: t.TempDir(), LookupEnv: EnvOf(testEnv), Overrides: []string{tc.key + "=1"}})
		var got string
		if err != nil {
			got = err.Error()
		}
		want := ""
		if tc.want != "" {
			want = "--config-property: " + tc.key + ": " + tc.want
		}
		if got != want {
			t.Errorf("%s:\n got  %q\n want %q", tc.key, got, want)
		}
	}
	// The keys of a selected plugin that declares none pass unchecked.
	for _, sel := range [][2]string{
		{"egret.statemgr=consul", "egret.statemgr.consul.address=10.0.0.1:8500"},
		{"egret.scheduler=lsf", "egret.lsf.queue.name=batch"},
		{"egret.scheduler=marathon", "egret.scheduler.marathon.uri=http://m"},
		{"egret.metrics.sinks=file,statsd", "egret.metrics.statsd.address=s:8125"},
	} {
		c, err := Load(LoadOptions{Cluster: "local", ConfigPath: t.TempDir(), LookupEnv: EnvOf(testEnv), Overrides: sel[:]})
		if err != nil {
			t.Errorf("%v: %v", sel, err)
			continue
		}
		k, v, _ := strings.Cut(sel[1], "=")
		if c.String(k) != v {
			t.Errorf("%v: %s = %q", sel, k, c.String(k))
		}
	}
}

// findBuiltin is a FindBackend that knows the built-in backends only.
func findBuiltin(kind, name, _ string) error {
	if slices.Contains(Builtins(kind), name) {
		return nil
	}
	return fmt.Errorf("no %s %q here", kind, name)
}

func TestParseClusterRoleEnv(t *testing.T) {
	cases := []struct {
		in                 string
		cluster, role, env string
		err                string
	}{
		{in: "local", cluster: "local"},
		{in: "nomad/alice", cluster: "nomad", role: "alice"},
		{in: "aurora/www-data/prod", cluster: "aurora", role: "www-data", env: "prod"},
		{in: "", err: "no cluster given"},
		{in: "a/b/c/d", err: `"a/b/c/d" has 4 parts: expected cluster[/role[/env]]`},
		{in: "nomad//prod", err: `"nomad//prod": the role is empty`},
		{in: "nomad/", err: `"nomad/": the role is empty`},
		{in: "/x", err: `"/x": the cluster name is empty`},
		{in: "nomad/al ice", err: `role "al ice" is invalid`},
		{in: "nomad/x/..", err: `environment ".." is invalid`},
		{in: "local/..", err: `role ".." is invalid`},
		{in: "..", err: `cluster name ".." is invalid`},
		{in: "local/%2e%2e", err: `role "%2e%2e" is invalid`},
		{in: "local/a\x00b", err: `role "a\x00b" is invalid`},
		{in: "local/a\uff0fb", err: `role "a\uff0fb" is invalid`},
		{in: "local/" + strings.Repeat("r", 64), err: "at most 63 characters"},
	}
	for _, tc := range cases {
		c, r, e, err := ParseClusterRoleEnv(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || c != tc.cluster || r != tc.role || e != tc.env {
			t.Errorf("%q = %q, %q, %q, %v", tc.in, c, r, e, err)
		}
	}
}

func TestParseBytes(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1048576", 1 << 20, true}, {"64KiB", 64 << 10, true}, {"64k", 64 << 10, true},
		{"100MiB", 100 << 20, true}, {"2GiB", 2 << 30, true}, {"1GB", 1e9, true}, {"1.5GiB", 3 << 29, true},
		{"512 B", 512, true}, {"1TiB", 1 << 40, true},
		{"", 0, false}, {"-1", 0, false}, {"10XB", 0, false}, {"MiB", 0, false}, {"99999999999TiB", 0, false},
	}
	for _, tc := range cases {
		got, err := ParseBytes(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v", tc.in, got, err)
		}
	}
}

// TestTopologyNameChecked: ${TOPOLOGY} becomes part of paths, so Load
// refuses a topology name that breaks the rule, whoever calls it.
func TestTopologyNameChecked(t *testing.T) {
	for _, name := range []string{"..", "../x", "a/b", "/abs", "a\x00b", "\uff0e\uff0e"} {
		_, err := Load(LoadOptions{Cluster: "local", Topology: name, ConfigPath: t.TempDir(), LookupEnv: EnvOf(testEnv)})
		if !errors.Is(err, names.ErrInvalid) {
			t.Errorf("Load with topology %q = %v, want an invalid-name error", name, err)
		}
	}
	c, err := Load(LoadOptions{Cluster: "local", Topology: "wordcount", ConfigPath: t.TempDir(), LookupEnv: EnvOf(testEnv)})
	if err != nil || !strings.HasSuffix(c.String("egret.scheduler.local.working.directory"), "/wordcount") {
		t.Errorf("Load with a valid topology: %v", err)
	}
}

// TestCheckpointStorageSelection: egret.checkpoint.storage selects the
// storage whose keys apply (localfs by default, with its root under
// EGRET_HOME); hdfs requires its NameNode; a plugin name must be found.
func TestCheckpointStorageSelection(t *testing.T) {
	c, err := Load(LoadOptions{Cluster: "local", Topology: "wordcount", ConfigPath: t.TempDir(), LookupEnv: EnvOf(testEnv)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Config()
	if cfg["egret.checkpoint.storage"] != "localfs" || cfg["egret.checkpoint.localfs.root"] != "/home/u/.egret/checkpoints/local" {
		t.Errorf("defaults: storage %q, root %q", cfg["egret.checkpoint.storage"], cfg["egret.checkpoint.localfs.root"])
	}
	if _, ok := cfg["egret.checkpoint.state.max.size"]; ok || cfg["egret.checkpoint.timeout"] != "2m" {
		t.Errorf("defaults: a max state size (removed: states arrive in chunks), timeout %q", cfg["egret.checkpoint.timeout"])
	}
	if _, ok := cfg["egret.checkpoint.hdfs.directory"]; ok {
		t.Error("hdfs keys get defaults while localfs is selected")
	}

	_, err = Load(LoadOptions{Cluster: "local", ConfigPath: t.TempDir(), LookupEnv: EnvOf(testEnv), Overrides: []string{"egret.checkpoint.storage=hdfs"}})
	if err == nil || !strings.Contains(err.Error(), "egret.checkpoint.hdfs.namenode: required by the hdfs checkpoint storage") {
		t.Errorf("hdfs without a NameNode: %v", err)
	}
	c, err = Load(LoadOptions{Cluster: "local", ConfigPath: t.TempDir(), LookupEnv: EnvOf(testEnv),
		Overrides: []string{"egret.checkpoint.storage=hdfs", "egret.checkpoint.hdfs.namenode=nn:8020"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Config()["egret.checkpoint.hdfs.directory"]; d != "/egret/checkpoints/local" {
		t.Errorf("hdfs directory default %q", d)
	}

	_, err = Load(LoadOptions{Cluster: "local", ConfigPath: t.TempDir(), LookupEnv: EnvOf(testEnv), FindBackend: findBuiltin,
		Overrides: []string{"egret.checkpoint.storage=s3", "egret.checkpoint.s3.bucket=b"}})
	if err == nil || !strings.Contains(err.Error(), `egret.checkpoint.storage: no checkpointstorage "s3" here`) || strings.Contains(err.Error(), "bucket") {
		t.Errorf("a plugin storage that is not installed: %v", err)
	}
	for _, bad := range []string{"egret.wire.max.frame.bytes=0", "egret.checkpoint.timeout=-1s", "egret.checkpoint.storage=Bad/Name"} {
		if _, err := Load(LoadOptions{Cluster: "local", ConfigPath: t.TempDir(), LookupEnv: EnvOf(testEnv), Overrides: []string{bad}}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
