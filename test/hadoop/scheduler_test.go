package hadoop

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/schedulertest"
	"github.com/egret-stream/egret/schedulers/yarn"
	egrethdfs "github.com/egret-stream/egret/uploaders/hdfs"
)

// sleeper stands in for the egret binary in the conformance package: a
// container that runs until it is stopped.
const sleeper = "#!/bin/sh\nexec sleep 100000\n"

func schedulerConfig(rm string) spi.Config {
	return spi.Config{
		yarn.KeyResourceManager: rm,
		yarn.KeyTManagerVcores:  "1",
		yarn.KeyTManagerMemory:  "128MiB",
		yarn.KeyAMMemory:        "512MiB",
		yarn.KeyLaunchTimeout:   "4m",
	}
}

// bundled marks a job whose package carries egret (the sleeper).
func bundled(j *spi.Job, uri, sha string) {
	j.PackageURI, j.PackageSHA256 = uri, sha
	j.Config = spi.Config{"egret.package.core.bundle": "true"}
}

// uploadSleeper uploads a package whose egret is the sleeper.
func uploadSleeper(t *testing.T) (uri, sha string) {
	t.Helper()
	c := needCluster(t)
	u, err := egrethdfs.New(uploaderConfig(c.NameNode, "/egret/sleeper/"+randomName("pkg")), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	pkg := makePackage(t, "sleeper", map[string]string{"egret": sleeper})
	uri, err = u.Upload(context.Background(), pkg)
	if err != nil {
		t.Fatal(err)
	}
	return uri, pkg.SHA256
}

// observe reads the running containers of a topology from the Services
// API itself: container index → YARN container id.
func observe(ctx context.Context, topology string) (map[int]string, error) {
	var svc yarn.Service
	err := cluster.GetJSON(ctx, "/app/v1/services/"+url.PathEscape(yarn.ServiceName(topology)), &svc)
	if err != nil {
		if strings.Contains(err.Error(), "404") {
			return map[int]string{}, nil
		}
		return nil, err
	}
	return svc.Containers(), nil
}

func conformanceHarness(t *testing.T, newSched func(t *testing.T) spi.Scheduler) schedulertest.Harness {
	uri, sha := uploadSleeper(t)
	return schedulertest.Harness{
		New:          func(t *testing.T, _ string) spi.Scheduler { return newSched(t) },
		Containers:   observe,
		EditJob:      func(j *spi.Job) { bundled(j, uri, sha) },
		Timeout:      4 * time.Minute,
		PollInterval: time.Second,
		StrictErrors: true,
		// The container's process (YARN sets CONTAINER_ID in its
		// environment) is killed with SIGKILL: the NodeManager reports the
		// container failed and the service's AM asks for a new one.
		LoseContainer: func(ctx context.Context, topology string, container int) error {
			running, err := observe(ctx, topology)
			if err != nil {
				return err
			}
			id := running[container]
			if id == "" {
				return fmt.Errorf("container %d of %s is not running (%v)", container, topology, running)
			}
			// YARN reports a container RUNNING before its launch script
			// has started the process: wait for one.
			for {
				n := 0
				entries, _ := os.ReadDir("/proc")
				for _, e := range entries {
					pid, err := strconv.Atoi(e.Name())
					if err != nil {
						continue
					}
					env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
					if err == nil && slices.Contains(strings.Split(string(env), "\x00"), "CONTAINER_ID="+id) {
						_ = syscall.Kill(pid, syscall.SIGKILL)
						n++
					}
				}
				if n > 0 {
					return nil
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("no process of YARN container %s (container %d of %s): %w", id, container, topology, ctx.Err())
				case <-time.After(200 * time.Millisecond):
				}
			}
		},
		// A container asking more vcores than the node has can never be
		// allocated.
		Unplaceable: func(j *spi.Job) { j.Plan.Containers[0].Required.CPU = 64 },
		// The ResourceManager and NameNode are cut off for longer than
		// the NodeManager's and the AM's heartbeat intervals (1s), then
		// restored: the containers run on, the service's AM reconnects.
		FailOver: func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := cluster.CutOff(ctx, 15*time.Second); err != nil {
				t.Fatal(err)
			}
		},
	}
}

func TestSchedulerConformance(t *testing.T) {
	c := needCluster(t)
	schedulertest.Run(t, conformanceHarness(t, func(t *testing.T) spi.Scheduler {
		s, err := yarn.New(schedulerConfig(c.RM), zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}))
}

func TestSchedulerConformancePlugin(t *testing.T) {
	c := needCluster(t)
	schedulertest.Run(t, conformanceHarness(t, func(t *testing.T) spi.Scheduler {
		return plugintest.LoadScheduler(t, "github.com/egret-stream/egret/cmd/egret-scheduler-yarn", "yarnplugin", schedulerConfig(c.RM))
	}))
}

// TestSchedulerBadInput submits what YARN cannot run: each fails with one
// line saying why, and leaves no service behind.
func TestSchedulerBadInput(t *testing.T) {
	c := needCluster(t)
	uri, sha := uploadSleeper(t)
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		edit func(*spi.Job)
		want string
	}{
		{"UnknownQueue", map[string]string{yarn.KeyQueue: "nosuch"}, nil, `queue "nosuch" does not exist`},
		{"TooBigForAnyNode", nil, func(j *spi.Job) {
			j.Plan.Containers[0].Required.CPU = 64
		}, "needs 64 vcores"},
		{"NoEgretBinary", nil, func(j *spi.Job) { j.Config = nil }, "egret.package.core.uri"},
		{"UnreachableRM", map[string]string{yarn.KeyResourceManager: "http://127.0.0.1:1"}, nil, "does not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := schedulerConfig(c.RM)
			for k, v := range tc.cfg {
				cfg[k] = v
			}
			s, err := yarn.New(cfg, zaptest.NewLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			topo := randomName("bad")
			job := schedulertest.NewJob(topo, 1)
			bundled(&job, uri, sha)
			if tc.edit != nil {
				tc.edit(&job)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			err = s.Schedule(ctx, job)
			if err == nil {
				t.Fatal("Schedule succeeded")
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q: want one line containing %q", msg, tc.want)
			}
			if got, err := observe(ctx, topo); err != nil || len(got) != 0 {
				t.Errorf("after the failed submit: containers %v, %v", got, err)
			}
			var svc yarn.Service
			if err := cluster.GetJSON(ctx, "/app/v1/services/"+yarn.ServiceName(topo), &svc); err == nil {
				t.Errorf("the failed submit left service %s (state %s)", svc.Name, svc.State)
			}
		})
	}
}

// TestSchedulerJobLinks checks the links point at the application in the
// ResourceManager's UI, and that a killed topology has none.
func TestSchedulerJobLinks(t *testing.T) {
	c := needCluster(t)
	uri, sha := uploadSleeper(t)
	s, err := yarn.New(schedulerConfig(c.RM), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	topo := randomName("links")
	job := schedulertest.NewJob(topo, 1)
	bundled(&job, uri, sha)
	ctx := context.Background()
	if err := s.Schedule(ctx, job); err != nil {
		t.Fatal(err)
	}
	defer s.Kill(ctx, topo)
	links, err := s.JobLinks(ctx, topo)
	if err != nil {
		t.Fatal(err)
	}
	if len(links) == 0 || !strings.HasPrefix(links[0], c.RM+"/cluster/app/application_") {
		t.Fatalf("links %v: want the application's page on %s", links, c.RM)
	}
	if err := s.Kill(ctx, topo); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JobLinks(ctx, topo); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("JobLinks of a killed topology: %v; want spi.ErrNotFound", err)
	}
}
