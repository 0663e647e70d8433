package nomad

import (
	"context"
	"time"

	"testing"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/nomad/nomadtest"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

func harness(f *nomadtest.Server, newSched func(t *testing.T) spi.Scheduler) schedulertest.Harness {
	return schedulertest.Harness{
		New:          func(t *testing.T, _ string) spi.Scheduler { return newSched(t) },
		Containers:   observer(f),
		StrictErrors: true,
		PollInterval: 5e6, // 5ms: the fake acts at once
		// The fake's clients download the package, as Nomad's do: the
		// suite's file:// URI would fail every allocation.
		EditJob: func(job *spi.Job) {
			job.PackageURI, job.PackageSHA256 = testPackageURI, sha256Hex(testPackage())
		},
	}
}

// TestConformance runs the scheduler conformance suite against the fake
// Nomad with the scheduler in process.
func TestConformance(t *testing.T) {
	f := newFake(t)
	schedulertest.Run(t, harness(f, func(t *testing.T) spi.Scheduler {
		s, err := New(schedConfig(f.URL), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}))
}

// TestConformanceGRPC runs the suite through the plugin protocol (gRPC
// adapters, in memory).
func TestConformanceGRPC(t *testing.T) {
	f := newFake(t)
	schedulertest.Run(t, harness(f, func(t *testing.T) spi.Scheduler {
		return plugintest.Scheduler(t, New, schedConfig(f.URL))
	}))
}

// TestConformancePlugin runs the suite against the egret-scheduler-nomad
// binary, loaded as an external plugin (under another name, so that the
// loader does not pick the built-in).
func TestConformancePlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the plugin binary")
	}
	f := newFake(t)
	dir := t.TempDir()
	plugintest.Install(t, dir, spi.KindScheduler, "nomadplugin", plugintest.Build(t, "github.com/egret-stream/egret/cmd/egret-scheduler-nomad"))
	loader := plugintest.NewLoader(t, dir)
	schedulertest.Run(t, harness(f, func(t *testing.T) spi.Scheduler {
		// Not t.Context(): the suite also builds schedulers in cleanups,
		// when that context is already cancelled.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := loader.LoadScheduler(ctx, "nomadplugin", schedConfig(f.URL))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(spi.Scalable); !ok {
			t.Error("the plugin's scheduler is not spi.Scalable")
		}
		return s
	}))
}
