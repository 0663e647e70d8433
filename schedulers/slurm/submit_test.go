package slurm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/internal/clitest"
	"github.com/egret-stream/egret/internal/zktest"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/slurm"
	"github.com/egret-stream/egret/schedulers/slurm/slurmtest"
)

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	clitest.WaitFor(t, what, timeout, 500*time.Millisecond, cond)
}

// processesUnder lists the processes whose working directory or command
// line is under dir.
func processesUnder(dir string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		raw, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cmd := strings.ReplaceAll(strings.TrimRight(string(raw), "\x00"), "\x00", " ")
		if strings.HasPrefix(cwd, dir) || strings.Contains(cmd, dir) {
			found = append(found, e.Name()+": "+cmd)
		}
	}
	return found
}

// TestWordCountOnSlurm runs `egret submit slurm ./examples/wordcount` on
// the one-node Slurm: counts rise, a kill -9 of an executor is survived
// (its task loop starts it again), restart of one container replaces only
// it, restart of all replaces every executor, update to 3 containers replaces the job with data flowing, and kill leaves no job, no process and no working directory.
func TestWordCountOnSlurm(t *testing.T) {
	c := needCluster(t)
	zk := zktest.Start(t)
	egret := plugintest.Build(t, "github.com/egret-stream/egret/cmd/egret")
	work := filepath.Join(t.TempDir(), "work")
	x := &clitest.CLI{T: t, Egret: egret, Home: t.TempDir(), Env: cluster.Env(), Props: []string{
		"egret.statemgr.connection.string=" + zk,
		"egret.slurm.egret.binary=" + egret,
		"egret.slurm.working.directory=" + work,
		"egret.packing.default.instance.cpu=0.5",
		"egret.packing.padding.cpu=0.5",
		"egret.packing.default.instance.ram=128MiB",
		"egret.packing.padding.ram=128MiB",
		"egret.metrics.export.interval=1s",
		"egret.executor.restart.backoff.initial=200ms",
	}}
	out := x.Must("config", "validate", "slurm", "--check-connectivity")
	if !strings.Contains(out, "scheduler slurm: reachable") {
		t.Errorf("config validate --check-connectivity printed no %q:\n%s", "scheduler slurm: reachable", out)
	}
	bad := x.With("egret.slurm.partition=nosuch")
	if out, errOut, code := bad.Run("config", "validate", "slurm", "--check-connectivity"); code == 0 || !strings.Contains(errOut, `partition "nosuch" does not exist`) {
		t.Errorf("--check-connectivity with an unknown partition: exit %d\n%s%s", code, out, errOut)
	}

	out = x.Must("submit", "slurm", "./examples/wordcount", "--dry-run", "--dry-run-format", "slurm", "--", "--containers", "2")
	for _, want := range []string{"sbatch '--parsable' '--job-name=egret-wordcount'", "'--ntasks=3'", "'" + egret + "' 'executor' '--topology' 'wordcount'", "--package-uri' 'file://"} {
		if !strings.Contains(out, want) {
			t.Errorf("submit --dry-run --dry-run-format slurm printed no %q:\n%s", want, out)
		}
	}
	if ids, _ := c.JobsNamed(context.Background(), slurm.JobName("wordcount")); len(ids) != 0 {
		t.Fatalf("the dry run submitted jobs %v", ids)
	}

	out = x.Must("submit", "slurm", "./examples/wordcount", "--wait", "3m", "--", "--containers", "2", "--rate", "200")
	if !strings.Contains(out, "is running") {
		t.Fatalf("submit did not report a running topology:\n%s", out)
	}
	killed := false
	defer func() {
		if !killed {
			x.Run("kill", "slurm", "wordcount")
		}
	}()
	ctx := context.Background()
	observe := func() map[int]string {
		got, err := c.Containers(ctx, slurm.JobName("wordcount"), slurmtest.IsEgretExecutor)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	containers := observe()
	if len(containers) != 3 {
		t.Fatalf("Slurm runs executors %v, want containers 0, 1 and 2", containers)
	}
	executed := func() float64 { return x.Executed("slurm", "wordcount") }
	var last float64
	waitFor(t, "word counts to rise", 3*time.Minute, func() bool { last = executed(); return last > 0 })
	t.Logf("executed %.0f tuples", last)

	// kill -9 of container 1's executor: its task loop starts a new one.
	var pid int
	fmt.Sscanf(containers[1][strings.IndexByte(containers[1], '/')+1:], "%d", &pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a new executor of container 1", 2*time.Minute, func() bool {
		now := observe()
		return now[1] != "" && now[1] != containers[1]
	})
	if now := observe(); now[0] != containers[0] || now[2] != containers[2] {
		t.Errorf("after the kill -9 of container 1 the executors are %v; containers 0 and 2 must be untouched (were %v)", now, containers)
	}
	before := executed()
	waitFor(t, "counts to rise after the kill -9", 3*time.Minute, func() bool { return executed() > before })

	// restart of container 2 only.
	containers = observe()
	x.Must("restart", "slurm", "wordcount", "2")
	waitFor(t, "container 2 to be restarted", 2*time.Minute, func() bool {
		now := observe()
		return now[2] != "" && now[2] != containers[2]
	})
	if now := observe(); now[0] != containers[0] || now[1] != containers[1] {
		t.Errorf("restart of container 2 touched the others: %v, were %v", now, containers)
	}
	before = executed()
	waitFor(t, "counts to rise after the restart", 3*time.Minute, func() bool { return executed() > before })

	// restart of every container, in place.
	containers = observe()
	x.Must("restart", "slurm", "wordcount")
	waitFor(t, "every container to be restarted", 2*time.Minute, func() bool {
		now := observe()
		return len(now) == 3 && now[0] != containers[0] && now[1] != containers[1] && now[2] != containers[2]
	})
	before = executed()
	waitFor(t, "counts to rise after restarting every container", 3*time.Minute, func() bool { return executed() > before })

	// update to 3 containers: a new job with the new plan replaces the old.
	oldJobs, _ := c.JobsNamed(ctx, slurm.JobName("wordcount"))
	// The restarted topology manager refuses to deactivate the topology
	// (and the update rolls back) until every stream manager registered
	// with it again, which can take longer than the counts take to rise.
	waitFor(t, "the update to be accepted by the restarted topology manager", 2*time.Minute, func() bool {
		out, errOut, code := x.Run("update", "slurm", "wordcount", "--container-number", "3")
		if code != 0 && strings.Contains(errOut, "have not registered") {
			return false
		}
		if code != 0 {
			t.Fatalf("egret update slurm wordcount --container-number 3: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		return true
	})
	waitFor(t, "4 executors in a new job", 3*time.Minute, func() bool {
		now := observe()
		ids, _ := c.JobsNamed(ctx, slurm.JobName("wordcount"))
		return len(now) == 4 && len(ids) == 1 && ids[0] != oldJobs[0]
	})
	before = executed()
	waitFor(t, "counts to rise on 3 containers", 3*time.Minute, func() bool { return executed() > before })

	if out := x.Must("list", "slurm"); !strings.Contains(out, "wordcount") {
		t.Errorf("list does not show wordcount:\n%s", out)
	}
	x.Must("kill", "slurm", "wordcount")
	killed = true
	if ids, err := c.JobsNamed(ctx, slurm.JobName("wordcount")); err != nil || len(ids) != 0 {
		t.Errorf("after kill squeue lists jobs %v (%v)", ids, err)
	}
	waitFor(t, "every process of the topology to end", time.Minute, func() bool { return len(processesUnder(work)) == 0 })
	leftOver(t, work)
	if out, _, _ := x.Run("list", "slurm"); strings.Contains(out, "wordcount") {
		t.Errorf("the state survived kill:\n%s", out)
	}
}
