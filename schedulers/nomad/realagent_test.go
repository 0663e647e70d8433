package nomad

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/nomad/nomadtest"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

// standInEgret is the egret binary of the real-agent conformance package:
// an executor stand-in that runs until it is killed. It is a shell loop,
// not an exec of sleep, so that its command line keeps the allocation's
// directory (how LoseContainer finds it: /bin/sh with the path of the allocation's egret).
const standInEgret = "#!/bin/sh\nwhile :; do sleep 1; done\n"

// TestConformanceRealAgent runs the scheduler conformance suite against a
// real Nomad agent (nomadtest.StartAgent: `nomad agent -dev`, raw_exec),
// the package served over HTTP as egret submit's uploader would. A lost
// container is its task's process killed with SIGKILL (Nomad's client
// restarts the task: a new restart count); an unplaceable job asks for
// more CPU than the node has.
func TestConformanceRealAgent(t *testing.T) {
	agent := nomadtest.StartAgent(t)
	pkg := tarGzFiles(map[string]string{"egret": standInEgret, "topology": standInEgret, "topology.defn": "", "cluster.json": "{}"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/packages/conformance.tar.gz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(pkg)
	}))
	t.Cleanup(srv.Close)
	client, err := api.NewClient(&api.Config{Address: agent.Addr})
	if err != nil {
		t.Fatal(err)
	}
	containers := func(ctx context.Context, topology string) (map[int]string, error) {
		return observeAgent(ctx, client, topology)
	}
	schedulertest.Run(t, schedulertest.Harness{
		New: func(t *testing.T, _ string) spi.Scheduler {
			// 100 MHz per core: a dev agent hands out its node's MHz.
			return newSched(t, schedConfig(agent.Addr, KeyMHzPerCore, "100", KeyPlacementTimeout, "30s"))
		},
		Containers: containers,
		EditJob: func(job *spi.Job) {
			job.PackageURI, job.PackageSHA256 = srv.URL+"/packages/conformance.tar.gz", sha256Hex(pkg)
		},
		StrictErrors: true,
		Timeout:      2 * time.Minute,
		PollInterval: 200 * time.Millisecond,
		LoseContainer: func(ctx context.Context, topology string, container int) error {
			running, err := containers(ctx, topology)
			if err != nil {
				return err
			}
			alloc, _, _ := strings.Cut(running[container], "/")
			if alloc == "" {
				return fmt.Errorf("container %d of %s runs no allocation (%v)", container, topology, running)
			}
			n := 0
			for _, p := range agent.Processes(alloc) {
				if p.Args[0] == "/bin/sh" {
					_ = syscall.Kill(p.Pid, syscall.SIGKILL)
					n++
				}
			}
			if n == 0 {
				return fmt.Errorf("allocation %s of container %d runs no process", alloc, container)
			}
			return nil
		},
		Unplaceable: func(job *spi.Job) {
			job.Plan.Containers[0].Required.CPU = 100000 // 10 THz at 100 MHz per core
		},
		Impossible: map[string]string{
			"FailOver": "a dev agent is its own server and client in one process: restarting the server restarts the client that runs the tasks (a failover of the servers alone needs a cluster of several servers and a separate client)",
		},
	})
}

// observeAgent returns the running containers of topology on a real
// agent: container → allocation id and the task's restart count.
func observeAgent(ctx context.Context, client *api.Client, topology string) (map[int]string, error) {
	q := (&api.QueryOptions{}).WithContext(ctx)
	stubs, _, err := client.Jobs().List(q)
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, j := range stubs {
		if j.Name != topology || j.Stop {
			continue
		}
		allocs, _, err := client.Jobs().Allocations(j.ID, false, q)
		if err != nil {
			return nil, err
		}
		for _, a := range allocs {
			if a.DesiredStatus != api.AllocDesiredStatusRun || a.ClientStatus != api.AllocClientStatusRunning {
				continue
			}
			c, ok := containerOf(a.TaskGroup)
			if !ok {
				continue
			}
			var restarts uint64
			if st := a.TaskStates[TaskName]; st != nil {
				if st.State != "running" {
					continue
				}
				restarts = st.Restarts
			}
			out[c] = fmt.Sprintf("%s/%d", a.ID, restarts)
		}
	}
	return out, nil
}
