package launcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/treehash"
)

// noBackends fails the test when an operation loads any backend.
type noBackends struct{ t *testing.T }

func (b noBackends) fail(kind string) error {
	b.t.Errorf("an invalid name reached the %s backend", kind)
	return errors.New("no backend")
}

func (b noBackends) StateManager(context.Context, spi.Config) (spi.StateManager, error) {
	return nil, b.fail("state manager")
}

func (b noBackends) Uploader(context.Context, spi.Config) (spi.Uploader, error) {
	return nil, b.fail("uploader")
}

func (b noBackends) Packing(context.Context, spi.Config) (spi.Packing, error) {
	return nil, b.fail("packing")
}

func (b noBackends) Scheduler(context.Context, spi.Config) (spi.Scheduler, error) {
	return nil, b.fail("scheduler")
}

// hostileNames are topology names every operation must refuse.
var hostileNames = []string{
	"", ".", "..", "../x", "../../../..", "a/b", "/abs", "%2e%2e", "a\x00b", " ", "a b", "a\n",
	"a\uff0fb", "\u2024\u2024", "\uff0e\uff0e", strings.Repeat("a", 300), "wc.1",
}

// TestOperationsRefuseInvalidNames: kill, activate, deactivate, runtime
// config, restart, update and metrics refuse an invalid topology name as
// bad input, before loading any backend and without changing a file.
func TestOperationsRefuseInvalidNames(t *testing.T) {
	home := t.TempDir()
	egretHome := filepath.Join(home, ".egret")
	victim := filepath.Join(egretHome, "topologies", "local", "u", "victim", "container-1", "executor.log")
	if err := os.MkdirAll(filepath.Dir(victim), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "USER": "u", "EGRET_HOME": egretHome}
	c, err := conf.Load(conf.LoadOptions{Cluster: "local", ConfigPath: filepath.Join(home, "conf"),
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	l := &Launcher{Cluster: c, Backends: noBackends{t}, Log: zap.NewNop()}
	before, err := treehash.Of(home)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range hostileNames {
		_, metricsErr := l.Metrics(ctx, name)
		for op, err := range map[string]error{
			"kill":           l.Kill(ctx, name, KillOptions{}),
			"activate":       l.SetActive(ctx, name, true),
			"deactivate":     l.SetActive(ctx, name, false),
			"runtime config": l.SetRuntimeConfig(ctx, name, map[string]string{"k": "v"}),
			"restart":        l.Restart(ctx, name, 1),
			"update":         l.Update(ctx, name, UpdateOptions{Containers: 2}),
			"metrics":        metricsErr,
		} {
			if !IsBadInput(err) || !errors.Is(err, names.ErrInvalid) {
				t.Errorf("%s %q = %v, want bad input naming the rule", op, name, err)
			} else if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, names.Topology.Rule()) {
				t.Errorf("%s %q: error %q is not one line naming the rule", op, name, msg)
			}
		}
	}
	for _, container := range []int{-2, -100} {
		if err := l.Restart(ctx, "wordcount", container); !IsBadInput(err) {
			t.Errorf("restart of container %d = %v, want bad input", container, err)
		}
	}
	after, err := treehash.Of(home)
	if err != nil {
		t.Fatal(err)
	}
	if d := before.Diff(after); d != nil {
		t.Errorf("invalid names changed files: %q", d)
	}
}
