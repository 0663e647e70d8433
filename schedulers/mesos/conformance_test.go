package mesos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
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
		// The container's task process is killed (SIGKILL) as a machine
		// failure would: the master reports TASK_FAILED and the framework
		// relaunches it.
		LoseContainer: func(ctx context.Context, topology string, container int) error {
			running, err := e.containers(ctx, topology)
			if err != nil {
				return err
			}
			if task, ok := running[container]; !ok || !e.m.KillTask(task) {
				return fmt.Errorf("container %d of %s runs no task to kill (%v)", container, topology, running)
			}
			return nil
		},
		// More CPUs than the agent has: no offer is ever big enough, and
		// the launch fails after egret.mesos.offer.timeout (conformanceConfig).
		Unplaceable: func(job *spi.Job) {
			job.Plan.Containers[0].Required.CPU = 1000
		},
		// A new leading master: every subscription closed, registrations
		// forgotten, tasks kept.
		FailOver: func(*testing.T) { e.m.Failover() },
	}
}

// conformanceConfig shortens the offer timeout so that the unplaceable
// check fails within the suite's timeout.
var conformanceConfig = spi.Config{KeyOfferTimeout: "5s"}

// TestConformance runs the scheduler conformance suite against the fake
// master, with the scheduler in process and real framework and task
// processes.
func TestConformance(t *testing.T) {
	e := newEnv(t, mesostest.Options{}, conformanceConfig)
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
	e := newEnv(t, mesostest.Options{}, spi.Config{KeyFrameworkBinary: bin, KeyOfferTimeout: conformanceConfig[KeyOfferTimeout]})
	dir := t.TempDir()
	plugintest.Install(t, dir, spi.KindScheduler, "mesosplugin", bin)
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
