package mesos

import (
	"context"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/mesos/mesostest"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

func harness(e *env, newSched func(t *testing.T, topology string) spi.Scheduler) schedulertest.Harness {
	return schedulertest.Harness{
		New:          newSched,
		Containers:   e.containers,
		EditJob:      e.editJob,
		StrictErrors: true,
		Timeout:      60 * time.Second,
		PollInterval: 20 * time.Millisecond,
	}
}

// TestConformance runs the scheduler conformance suite against the fake
// master, with the scheduler in process and real framework and task
// processes.
func TestConformance(t *testing.T) {
	e := newEnv(t, mesostest.Options{}, nil)
	schedulertest.Run(t, harness(e, func(t *testing.T, topology string) spi.Scheduler { return e.sched(t, topology) }))
}

// TestConformancePlugin runs the suite against the egret-scheduler-mesos
// binary loaded as an external plugin; the plugin binary also runs the
// frameworks.
func TestConformancePlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the plugin binary")
	}
	bin := plugintest.Build(t, "github.com/egret-stream/egret/cmd/egret-scheduler-mesos")
	e := newEnv(t, mesostest.Options{}, spi.Config{KeyFrameworkBinary: bin})
	dir := t.TempDir()
	plugintest.Install(t, dir, plugins.KindScheduler, "mesosplugin", bin)
	loader := plugintest.NewLoader(t, dir)
	schedulertest.Run(t, harness(e, func(t *testing.T, topology string) spi.Scheduler {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := loader.LoadScheduler(ctx, "mesosplugin", e.config(topology))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(spi.Launcher); !ok {
			t.Error("the plugin's scheduler is not spi.Launcher")
		}
		return s
	}))
}
