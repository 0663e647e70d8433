package aurora

import (
	"context"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/aurora/auroratest"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

// harness observes the fake's RUNNING tasks: container i is instance i,
// its identity the task id (a restarted or rescheduled task is a new one).
// A lost container is a task whose processes were killed; an unplaceable
// job one of a role the agent has no account for (the fake's users are
// fakeUsers); a failover takes the API down and up again.
func harness(f *auroratest.Server, newSched func(t *testing.T) spi.Scheduler) schedulertest.Harness {
	return schedulertest.Harness{
		New: func(t *testing.T, _ string) spi.Scheduler { return newSched(t) },
		Containers: func(_ context.Context, topology string) (map[int]string, error) {
			out := f.Running("tester", "test", topology)
			for id, task := range f.Running(noAccount, "test", topology) {
				out[id] = task
			}
			return out, nil
		},
		LoseContainer: func(_ context.Context, topology string, container int) error {
			return f.KillTask("tester", "test", topology, container)
		},
		Unplaceable: func(job *spi.Job) { job.Role = noAccount },
		FailOver: func(t *testing.T) {
			f.Stop()
			if err := f.Start(); err != nil {
				t.Fatal(err)
			}
		},
		StrictErrors: true,
		PollInterval: 10 * time.Millisecond,
	}
}

// noAccount is a role the fake agent has no Unix account for.
const noAccount = "nobody"

// fakeUsers are the Unix accounts of the conformance tests' fake agent.
var fakeUsers = auroratest.WithUsers("tester")

// TestConformance runs the scheduler conformance suite against the fake
// Aurora, whose tasks run as processes, with the scheduler in process.
func TestConformance(t *testing.T) {
	f := fakeServer(t, fakeUsers)
	core := coreServer(t, fakeEgret)
	schedulertest.Run(t, harness(f, func(t *testing.T) spi.Scheduler {
		return newSched(t, schedConfig(f.URL, core.URL+"/egret"))
	}))
	if live := f.Live(); len(live) > 0 {
		t.Errorf("task processes %v still run after every topology was killed", live)
	}
}

// TestConformanceGRPC runs the suite through the plugin protocol (gRPC
// adapters, in memory).
func TestConformanceGRPC(t *testing.T) {
	f := fakeServer(t, fakeUsers)
	core := coreServer(t, fakeEgret)
	schedulertest.Run(t, harness(f, func(t *testing.T) spi.Scheduler {
		return plugintest.Scheduler(t, New, schedConfig(f.URL, core.URL+"/egret"))
	}))
}

// TestConformancePlugin runs the suite against the egret-scheduler-aurora
// binary, loaded as an external plugin (under another name, so that the
// loader does not pick the built-in).
func TestConformancePlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the plugin binary")
	}
	f := fakeServer(t, fakeUsers)
	core := coreServer(t, fakeEgret)
	dir := t.TempDir()
	plugintest.Install(t, dir, spi.KindScheduler, "auroraplugin", plugintest.Build(t, "github.com/egret-stream/egret/cmd/egret-scheduler-aurora"))
	loader := plugintest.NewLoader(t, dir)
	schedulertest.Run(t, harness(f, func(t *testing.T) spi.Scheduler {
		// Not t.Context(): the suite also builds schedulers in cleanups,
		// when that context is already cancelled.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := loader.LoadScheduler(ctx, "auroraplugin", schedConfig(f.URL, core.URL+"/egret"))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(spi.Scalable); !ok {
			t.Error("the plugin's scheduler is not spi.Scalable")
		}
		return s
	}))
}
