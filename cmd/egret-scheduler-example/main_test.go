package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/egret-stream/egret/catalog"
	"github.com/egret-stream/egret/cmd/egret-scheduler-example/example"
	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

func TestMain(m *testing.M) { plugintest.Main(m, ".") }

func harness(file string, newScheduler func(t *testing.T) spi.Scheduler) schedulertest.Harness {
	return schedulertest.Harness{
		New: func(t *testing.T, _ string) spi.Scheduler { return newScheduler(t) },
		Containers: func(_ context.Context, topology string) (map[int]string, error) {
			return example.Containers(file, topology)
		},
		Timeout:      20 * time.Second,
		StrictErrors: true,
	}
}

// The conformance suite against the scheduler in process.
func TestConformance(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cluster.json")
	schedulertest.Run(t, harness(file, func(t *testing.T) spi.Scheduler {
		s, err := example.New(spi.Config{example.KeyStateFile: file}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}))
}

// The conformance suite against the plugin binary built from this
// directory: every scheduler the suite asks for is a new plugin process,
// as every CLI command starts one.
func TestConformanceAsPlugin(t *testing.T) {
	dir := t.TempDir()
	plugintest.Install(t, dir, spi.KindScheduler, "example", plugintest.Build(t, "."))
	loader := plugintest.NewLoader(t, dir)
	file := filepath.Join(t.TempDir(), "cluster.json")
	schedulertest.Run(t, harness(file, func(t *testing.T) spi.Scheduler {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := loader.LoadScheduler(ctx, "example", spi.Config{example.KeyStateFile: file})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := plugins.ProcessOf(s); !ok {
			t.Fatal("the example scheduler was not loaded as a plugin")
		}
		return s
	}))
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	plugintest.Install(t, dir, spi.KindScheduler, "example", plugintest.Build(t, "."))
	loader := plugintest.NewLoader(t, dir)
	_, err := loader.LoadScheduler(context.Background(), "example", nil)
	if err == nil || !strings.Contains(err.Error(), example.KeyStateFile+" is required") {
		t.Fatalf("load without a state file: %v", err)
	}

	file := filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(file, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := loader.LoadScheduler(context.Background(), "example", spi.Config{example.KeyStateFile: file})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Schedule(context.Background(), schedulertest.NewJob("wc", 1))
	if err == nil || !strings.Contains(err.Error(), "is corrupt") {
		t.Fatalf("schedule with a corrupt state file: %v", err)
	}
}

// TestDeclaresItsKeys: across the plugin boundary the binary declares its
// config keys, and a cluster config that selects it has them checked as a
// built-in's are (conf.LoadOptions.PluginKeys, as the CLI sets it).
func TestDeclaresItsKeys(t *testing.T) {
	dir := t.TempDir()
	plugintest.Install(t, dir, spi.KindScheduler, "example", plugintest.Build(t, "."))
	loader := plugintest.NewLoader(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys, declared, err := loader.Keys(ctx, spi.KindScheduler, "example")
	if err != nil || !declared || len(keys) != 1 || keys[0].Name != example.KeyStateFile || !keys[0].Required || keys[0].Doc != example.Keys[0].Doc {
		t.Fatalf("Keys = %+v, %v, %v", keys, declared, err)
	}

	confDir := t.TempDir()
	files := map[string]string{
		"ex/client.yaml":    "egret.plugin.directory: " + dir + "\n",
		"ex/scheduler.yaml": "egret.scheduler: example\n",
		"ex/statemgr.yaml":  "egret.statemgr: localfs\negret.statemgr.root.path: /tmp/ex-state\n",
		"ex/uploader.yaml":  "egret.uploader: localfs\n",
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Join(confDir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(confDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	load := func(props ...string) error {
		_, err := conf.Load(conf.LoadOptions{Cluster: "ex", ConfigPath: confDir, Overrides: props,
			FindBackend: func(kind, name, pluginDir string) error {
				_, err := plugins.NewLoader(pluginDir, nil).Find(kind, name)
				return err
			},
			PluginKeys: func(kind, name, pluginDir string) ([]spi.Key, bool, error) {
				return plugins.NewLoader(pluginDir, nil).Keys(ctx, kind, name)
			}})
		return err
	}
	for _, tc := range []struct {
		props []string
		want  string // "" = valid
	}{
		{[]string{example.KeyStateFile + "=/tmp/ex.json"}, ""},
		{nil, example.KeyStateFile + ": required by the example scheduler"},
		{[]string{example.KeyStateFile + "=/tmp/ex.json", "egret.scheduler.example.state.fil=x"},
			"egret.scheduler.example.state.fil: unknown key of the scheduler plugin example; did you mean " + example.KeyStateFile + "?"},
	} {
		err := load(tc.props...)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: %v, want %q", tc.props, err, tc.want)
		}
	}
}
