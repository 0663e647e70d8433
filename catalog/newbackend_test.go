package catalog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
)

// errBuilt is what the test scheduler's factory returns: the test only
// needs to see that the CLI's loader reaches it.
var errBuilt = errors.New("tinysched built")

// TestNewBackendNeedsOnlyItsRegistration registers a scheduler with its
// keys, as a new backend's init function does (its folder plus one import
// line in catalog.go), and finds it everywhere: the schema, the generated
// reference, validation and defaults, the built-in lists and the CLI's
// backend loader. Nothing in conf, cli or plugins names it.
func TestNewBackendNeedsOnlyItsRegistration(t *testing.T) {
	var got spi.Config
	spi.RegisterScheduler("tinysched", func(cfg spi.Config, _ *zap.Logger) (spi.Scheduler, error) {
		got = cfg
		return nil, errBuilt
	},
		spi.Key{Name: "egret.tinysched.endpoint", Type: spi.KeyString, Default: "http://127.0.0.1:7000", Check: spi.CheckHTTPURL,
			Doc: "Where tinysched listens."},
		spi.Key{Name: "egret.tinysched.slots", Type: spi.KeyInt, Default: "4", Check: spi.CheckPositive,
			Doc: "Slots per node."},
		spi.Key{Name: "egret.tinysched.queue", Type: spi.KeyString, Required: true,
			Doc: "Queue of the jobs."})

	// The schema and the built-in list.
	k, ok := conf.LookupKey("egret.tinysched.slots")
	if !ok || k.Backend != "scheduler/tinysched" || k.File != "scheduler" || k.Type != spi.KeyInt {
		t.Errorf("LookupKey: %+v, %v", k, ok)
	}
	if !slices.Contains(conf.Builtins(spi.KindScheduler), "tinysched") {
		t.Errorf("Builtins = %v", conf.Builtins(spi.KindScheduler))
	}
	// The generated reference.
	ref := conf.Reference()
	for _, want := range []string{"| `egret.tinysched.slots` | int | `4` |  | scheduler/tinysched | Slots per node. |", "`tinysched`"} {
		if !strings.Contains(ref, want) {
			t.Errorf("Reference() lacks %q", want)
		}
	}
	if !strings.Contains(ref, "a built-in name (aurora, kubernetes, local, mesos, nomad, slurm, tinysched, yarn)") {
		t.Error("the doc of egret.scheduler does not list tinysched")
	}

	// Validation and defaults, in a cluster selecting it.
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "tiny"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tiny", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("scheduler.yaml", "egret.scheduler: tinysched\negret.tinysched.queue: batch\n")
	write("statemgr.yaml", "egret.statemgr: localfs\negret.statemgr.root.path: /tmp/tiny-state\n")
	write("uploader.yaml", "egret.uploader: localfs\n")
	find := func(kind, name, pluginDir string) error {
		_, err := plugins.NewLoader(pluginDir, nil).Find(kind, name)
		return err
	}
	env := func(k string) (string, bool) { return map[string]string{"HOME": "/home/u", "USER": "u"}[k], true }
	load := func(props ...string) (*conf.Cluster, error) {
		return conf.Load(conf.LoadOptions{Cluster: "tiny", ConfigPath: dir, LookupEnv: env, FindBackend: find, Overrides: props})
	}
	c, err := load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.String("egret.tinysched.slots") != "4" || c.Origin("egret.tinysched.slots") != conf.OriginDefault {
		t.Errorf("default: %q from %q", c.String("egret.tinysched.slots"), c.Origin("egret.tinysched.slots"))
	}
	for _, tc := range []struct{ prop, want string }{
		{"egret.tinysched.slots=0", `egret.tinysched.slots: "0" must be greater than zero`},
		{"egret.tinysched.slot=2", "egret.tinysched.slot: unknown key of the built-in tinysched scheduler; did you mean egret.tinysched.slots?"},
		{"egret.tinysched.queue=", "egret.tinysched.queue: required by the tinysched scheduler"},
	} {
		if _, err := load(tc.prop); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.prop, err, tc.want)
		}
	}

	// The CLI's loader builds it as a built-in.
	if path, err := plugins.NewLoader("", nil).Find(spi.KindScheduler, "tinysched"); err != nil || path != "" {
		t.Errorf("Find: %q, %v", path, err)
	}
	if _, err := plugins.NewLoader("", zap.NewNop()).LoadScheduler(context.Background(), "tinysched", c.Config()); !errors.Is(err, errBuilt) || got["egret.tinysched.queue"] != "batch" {
		t.Errorf("LoadScheduler: %v, config %v", err, got)
	}
}
