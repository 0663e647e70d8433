package slurm_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/schedulertest"
	"github.com/egret-stream/egret/schedulers/slurm"
)

// sleeper stands in for the egret binary: an "executor" that runs until it
// is stopped.
const sleeper = "#!/bin/sh\nexec sleep 100000\n"

// isSleeper tells the sleeper's process from the task loop's backoff sleep.
func isSleeper(args []string) bool {
	return len(args) == 2 && filepath.Base(args[0]) == "sleep" && args[1] == "100000"
}

// fixture is what a test's scheduler config points at: a stand-in egret
// binary and a working directory.
type fixture struct {
	egret, work string
}

func newFixture(t *testing.T, egretScript string) fixture {
	t.Helper()
	dir := t.TempDir()
	f := fixture{egret: filepath.Join(dir, "egret"), work: filepath.Join(dir, "work")}
	if err := os.WriteFile(f.egret, []byte(egretScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f fixture) config() spi.Config {
	return spi.Config{
		slurm.KeyEgretBinary:    f.egret,
		slurm.KeyWorkingDir:     f.work,
		slurm.KeyLaunchTimeout:  "60s",
		slurm.KeyCommandTimeout: "20s",
	}
}

func randomName(prefix string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// observe reads a topology's containers from Slurm itself (squeue and
// scontrol listpids) and the node's processes.
func observe(ctx context.Context, topology string) (map[int]string, error) {
	return cluster.Containers(ctx, slurm.JobName(topology), isSleeper)
}

// loseContainer kills the executor of container c with SIGKILL, as a crash
// would.
func loseContainer(ctx context.Context, topology string, c int) error {
	got, err := observe(ctx, topology)
	if err != nil {
		return err
	}
	_, pid, ok := strings.Cut(got[c], "/")
	if !ok {
		return os.ErrNotExist
	}
	n, err := strconv.Atoi(pid)
	if err != nil {
		return err
	}
	return syscall.Kill(n, syscall.SIGKILL)
}

func conformanceHarness(t *testing.T, newSched func(t *testing.T) spi.Scheduler) schedulertest.Harness {
	return schedulertest.Harness{
		New:          func(t *testing.T, _ string) spi.Scheduler { return newSched(t) },
		Containers:   observe,
		Timeout:      90 * time.Second,
		PollInterval: 200 * time.Millisecond,
		// Update replaces the job: a running Slurm job cannot change size.
		UpdateMayRestart: true,
		StrictErrors:     true,
		EditJob: func(j *spi.Job) {
			j.Config["egret.executor.restart.backoff.initial"] = "200ms"
		},
		LoseContainer: loseContainer,
		Unplaceable: func(j *spi.Job) {
			j.Plan.Containers[0].Required.CPU = 64
		},
		FailOver: func(t *testing.T) {
			cluster.StopController()
			if err := cluster.StartController(context.Background()); err != nil {
				t.Fatal(err)
			}
		},
	}
}

func TestConformance(t *testing.T) {
	needCluster(t)
	f := newFixture(t, sleeper)
	schedulertest.Run(t, conformanceHarness(t, func(t *testing.T) spi.Scheduler {
		s, err := slurm.New(f.config(), zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}))
}

func TestConformancePlugin(t *testing.T) {
	needCluster(t)
	f := newFixture(t, sleeper)
	schedulertest.Run(t, conformanceHarness(t, func(t *testing.T) spi.Scheduler {
		return plugintest.LoadScheduler(t, "github.com/egret-stream/egret/cmd/egret-scheduler-slurm", "slurmplugin", f.config())
	}))
}

// TestPluginNeedsEgretBinary: the plugin binary cannot stand in for egret
// on the compute nodes; without egret.slurm.egret.binary it refuses, and
// submits nothing.
func TestPluginNeedsEgretBinary(t *testing.T) {
	needCluster(t)
	f := newFixture(t, sleeper)
	cfg := f.config()
	delete(cfg, slurm.KeyEgretBinary)
	s := plugintest.LoadScheduler(t, "github.com/egret-stream/egret/cmd/egret-scheduler-slurm", "slurmplugin", cfg)
	topo := randomName("noegret")
	err := s.Schedule(context.Background(), schedulertest.NewJob(topo, 1))
	if err == nil || !strings.Contains(err.Error(), slurm.KeyEgretBinary) {
		t.Fatalf("Schedule through the plugin without %s: %v", slurm.KeyEgretBinary, err)
	}
	if ids, _ := cluster.JobsNamed(context.Background(), slurm.JobName(topo)); len(ids) != 0 {
		t.Errorf("jobs %v were submitted", ids)
	}
}
