package aurora

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/aurora/auroratest"
)

const testSHA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// fakeEgret is the "egret binary" the tests' tasks fetch: it stands for
// the executor and runs until it is stopped.
const fakeEgret = "#!/bin/sh\nexec sleep 3600\n"

// coreServer serves script as the egret binary at /egret.
func coreServer(t *testing.T, script string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/egret" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(script))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// schedConfig is the scheduler config of the tests against the fake at
// addr: role tester, environment test (those of schedulertest.NewJob).
func schedConfig(addr, coreURI string, extra ...string) spi.Config {
	c := spi.Config{
		KeySchedulerURI:             addr,
		KeyCluster:                  "devcluster",
		KeyRole:                     "tester",
		KeyEnviron:                  "test",
		KeyWaitTimeout:              "30s",
		KeyKillRetry:                "100ms",
		"egret.package.core.uri":    coreURI,
		"egret.executor.stop.grace": "1s",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i]] = extra[i+1]
	}
	return c
}

// newSched builds a scheduler from cfg, closed when t ends.
func newSched(t *testing.T, cfg spi.Config) *Scheduler {
	t.Helper()
	s, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	sc := s.(*Scheduler)
	sc.poll = 5 * time.Millisecond
	return sc
}

// wordcount is a fixed job with n containers of distinct sizes.
func wordcount(n int) spi.Job {
	p := &plan.PackingPlan{TopologyID: "wordcount-7f3a9c"}
	for i := 1; i <= n; i++ {
		r := plan.Resources{CPU: 0.5 + float64(i), RAM: int64(512*(i+1)) << 20, Disk: int64(i) << 30}
		p.Containers = append(p.Containers, plan.Container{
			ID: i,
			Instances: []plan.Instance{
				{Component: "sentence", TaskID: 2*i - 1, Index: i - 1, Resources: plan.Resources{CPU: 0.5, RAM: 256 << 20, Disk: 128 << 20}},
				{Component: "count", TaskID: 2 * i, Index: i - 1, Resources: plan.Resources{CPU: 1, RAM: 512 << 20, Disk: 128 << 20}},
			},
			Required: r,
		})
	}
	return spi.Job{
		Topology: "wordcount", TopologyID: "wordcount-7f3a9c", Cluster: "aurora", Role: "www", Environ: "prod",
		PackageURI:    "http://packages.example.com:7780/packages/wordcount-www-9f86d081884c.tar.gz",
		PackageSHA256: testSHA,
		Plan:          p,
		Config:        spi.Config{"egret.statemgr": "zookeeper"},
	}
}

// waitFor polls cond until it holds, failing t after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// fakeServer is a fake Aurora whose failed tasks come back quickly.
func fakeServer(t *testing.T, opts ...auroratest.Option) *auroratest.Server {
	return auroratest.New(t, append([]auroratest.Option{auroratest.WithRescheduleDelay(20 * time.Millisecond)}, opts...)...)
}
