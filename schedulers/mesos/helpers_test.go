package mesos

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	mesoslib "github.com/mesos/mesos-go/api/v1/lib"
	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/mesos/mesostest"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

const fakeEgretPkg = "github.com/egret-stream/egret/schedulers/mesos/testdata/fakeegret"

// env is a fake Mesos master and what the scheduler needs to run
// topologies on it with the fake egret binary.
type env struct {
	t     *testing.T
	m     *mesostest.Master
	bin   string // fakeegret: the framework binary and the core binary
	base  string // the topologies' working directories
	pkg   string // a "topology package" the fetcher fetches
	extra spi.Config
}

func newEnv(t *testing.T, opts mesostest.Options, extra spi.Config) *env {
	t.Helper()
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = time.Second
	}
	e := &env{t: t, m: mesostest.New(t, opts), bin: plugintest.Build(t, fakeEgretPkg), base: t.TempDir(), extra: extra}
	e.pkg = filepath.Join(t.TempDir(), "topology.tar.gz")
	if err := os.WriteFile(e.pkg, []byte("a package"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Runs before the master closes (cleanups run last-in first-out):
	// framework processes are detached, so they are killed here.
	t.Cleanup(e.killFrameworks)
	t.Cleanup(func() {
		if t.Failed() {
			e.dumpLogs()
		}
	})
	return e
}

// dumpLogs logs the tail of the framework logs and of the tasks' stderr.
func (e *env) dumpLogs() {
	logs, _ := filepath.Glob(filepath.Join(e.base, "*", logFile))
	tasks := e.m.Tasks("")
	for _, tv := range tasks[max(0, len(tasks)-6):] {
		logs = append(logs, filepath.Join(tv.Sandbox, "stderr"))
	}
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		e.t.Logf("== %s\n%s", f, b)
	}
}

// config is the scheduler config of topology.
func (e *env) config(topology string) spi.Config {
	cfg := spi.Config{
		KeyMasterURI:        e.m.URL,
		keyWorkDir:          filepath.Join(e.base, topology),
		keyCoreURI:          "file://" + e.bin,
		KeyFrameworkBinary:  e.bin,
		KeyBackoffInitial:   "100ms",
		KeyBackoffMax:       "1s",
		KeyTManagerCPU:      "0.5",
		KeyTManagerRAM:      "128MiB",
		KeyTManagerDisk:     "128MiB",
		KeyLaunchTimeout:    "60s",
		KeySubscribeTimeout: "10s",
		keyStopGrace:        "2s",
	}
	for k, v := range e.extra {
		cfg[k] = v
	}
	return cfg
}

func (e *env) sched(t *testing.T, topology string) *Scheduler {
	t.Helper()
	s, err := New(e.config(topology), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Scheduler)
}

// job is the conformance suite's job with a package the fetcher finds.
func (e *env) job(topology string, containers int) spi.Job {
	j := schedulertest.NewJob(topology, containers)
	e.editJob(&j)
	return j
}

func (e *env) editJob(j *spi.Job) {
	j.PackageURI = "file://" + e.pkg
	j.PackageSHA256 = ""
}

// containers observes the master: the running tasks of the topology's
// framework, container → task id.
func (e *env) containers(_ context.Context, topology string) (map[int]string, error) {
	out := map[int]string{}
	for _, tv := range e.m.Tasks(FrameworkName(topology)) {
		if tv.State != mesoslib.TASK_RUNNING {
			continue
		}
		c, err := strconv.Atoi(tv.Labels[LabelContainer])
		if err != nil {
			return nil, err
		}
		out[c] = tv.ID
	}
	return out, nil
}

// killFrameworks kills the framework processes a test left behind.
func (e *env) killFrameworks() {
	dirs, _ := filepath.Glob(filepath.Join(e.base, "*"))
	for _, d := range dirs {
		var ep endpoint
		if readJSON(filepath.Join(d, endpointFile), &ep) == nil && ep.alive() {
			e.t.Logf("killing the framework process %d left in %s", ep.PID, d)
			_ = syscall.Kill(ep.PID, syscall.SIGKILL)
			waitGone(context.Background(), ep, 10*time.Second)
		}
	}
}

// waitFor polls cond until it holds, failing t after timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last: %s", timeout, what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
