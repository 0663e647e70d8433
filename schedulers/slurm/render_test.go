package slurm_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/schedulertest"
	"github.com/egret-stream/egret/schedulers/slurm"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestRenderJob pins the exact sbatch command line and batch script, with
// every key that shapes them set.
func TestRenderJob(t *testing.T) {
	s, err := slurm.New(spi.Config{
		slurm.KeyPartition:    "stream",
		slurm.KeyAccount:      "ops",
		slurm.KeyQOS:          "long",
		slurm.KeyTimeLimit:    "7-00:00:00",
		slurm.KeyTasksPerNode: "2",
		slurm.KeyEgretBinary:  "/opt/egret/bin/egret",
		slurm.KeyWorkingDir:   "/scratch/egret",
		slurm.KeySbatch:       "/opt/slurm/bin/sbatch",
		slurm.KeySrun:         "/opt/slurm/bin/srun",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	job := schedulertest.NewJob("wordcount", 2)
	job.Plan.Containers[1].Required.CPU = 1.5
	job.Plan.Containers[1].Required.RAM = 3 << 29 // 1.5 GiB
	job.Config["egret.executor.restart.backoff.initial"] = "250ms"
	job.Config["egret.executor.restart.backoff.max"] = "30s"
	got, err := s.(spi.JobRenderer).RenderJob(job)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "wordcount.sbatch.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("RenderJob differs from %s (go test -run TestRenderJob -update rewrites it):\n%s", golden, got)
	}
	for _, want := range []string{
		"'--partition=stream'", "'--account=ops'", "'--qos=long'", "'--time=7-00:00:00'",
		"'--ntasks=3'", "'--ntasks-per-node=2'", "'--nodes=2'", "'--cpus-per-task=2'", "'--mem-per-cpu=768M'",
		"# /opt/slurm/bin/sbatch ", "'/opt/slurm/bin/srun' --kill-on-bad-exit=0", "'/opt/egret/bin/egret' 'executor'",
		"base='/scratch/egret'\n", "delay=250\n", "-le 30000 ]",
		"'--job-name=egret-wordcount'", "'--comment=egret topology wordcount id wordcount-id cluster conformance role tester environ test'",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the rendered job has no %q", want)
		}
	}
}

// TestDefaults: with no keys set the job names no partition, account,
// QoS, time limit or node count, and uses the commands on PATH.
func TestDefaults(t *testing.T) {
	s, err := slurm.New(spi.Config{slurm.KeyEgretBinary: "/usr/bin/egret"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.(spi.JobRenderer).RenderJob(schedulertest.NewJob("wordcount", 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, not := range []string{"--partition", "--account", "--qos", "--time", "--nodes", "--ntasks-per-node"} {
		if strings.Contains(string(got), not) {
			t.Errorf("the default job sets %s", not)
		}
	}
	for _, want := range []string{"# sbatch ", "'srun' --kill-on-bad-exit=0", "base='/tmp/egret-slurm'\n", "delay=1000\n", "-le 60000 ]", "'--cpus-per-task=1'", "'--mem-per-cpu=128M'"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the default job has no %q", want)
		}
	}
}

// TestRefusesBadJobs: names with line breaks, gaps in the plan's
// containers and a missing package are refused before anything runs.
func TestRefusesBadJobs(t *testing.T) {
	s, err := slurm.New(spi.Config{slurm.KeyEgretBinary: "/usr/bin/egret"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*spi.Job){
		"BadTopologyName": func(j *spi.Job) { j.Topology = "a/b" },
		"LineBreak":       func(j *spi.Job) { j.TopologyID = "x\nEGRET_SLURM_TASK" },
		"GapInPlan":       func(j *spi.Job) { j.Plan.Containers[1].ID = 5 },
		"NoPackage":       func(j *spi.Job) { j.PackageURI = "" },
		"BadBackoff":      func(j *spi.Job) { j.Config["egret.executor.restart.backoff.initial"] = "-1s" },
	} {
		t.Run(name, func(t *testing.T) {
			j := schedulertest.NewJob("wordcount", 2)
			edit(&j)
			if _, err := s.(spi.JobRenderer).RenderJob(j); err == nil {
				t.Fatal("RenderJob accepted the job")
			} else {
				t.Log(err)
			}
		})
	}
}
