package slurm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/internal/zktest"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/slurm"
	"github.com/egret-stream/egret/schedulers/slurm/slurmtest"
)

// cli runs the egret CLI against the slurm cluster of the one-node Slurm.
type cli struct {
	t     *testing.T
	egret string
	home  string
	props []string
}

func (c *cli) run(args ...string) (string, string, int) {
	c.t.Helper()
	var full []string
	for _, p := range c.props {
		full = append(full, "--config-property", p)
	}
	full = append(full, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.egret, full...)
	cmd.Dir = repoRoot(c.t)
	cmd.Env = append(cluster.Env(), "EGRET_HOME="+c.home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return out.String(), errb.String(), code
}

func (c *cli) must(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("egret %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func repoRoot(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// executed sums the tuples the topology's bolts executed (egret metrics).
func (c *cli) executed() float64 {
	out, _, code := c.run("metrics", "slurm", "wordcount", "-o", "json")
	if code != 0 {
		return -1
	}
	var st struct {
		Components map[string]map[string]float64 `json:"components"`
	}
	if json.Unmarshal([]byte(out), &st) != nil {
		return -1
	}
	var n float64
	for _, m := range st.Components {
		n += m["instance.executed"]
	}
	return n
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(500 * time.Millisecond)
	}
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
	x := &cli{t: t, egret: egret, home: t.TempDir(), props: []string{
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
	out := x.must("config", "validate", "slurm", "--check-connectivity")
	if !strings.Contains(out, "scheduler slurm: reachable") {
		t.Errorf("config validate --check-connectivity printed no %q:\n%s", "scheduler slurm: reachable", out)
	}
	bad := &cli{t: t, egret: egret, home: x.home, props: append(append([]string(nil), x.props...), "egret.slurm.partition=nosuch")}
	if out, errOut, code := bad.run("config", "validate", "slurm", "--check-connectivity"); code == 0 || !strings.Contains(errOut, `partition "nosuch" does not exist`) {
		t.Errorf("--check-connectivity with an unknown partition: exit %d\n%s%s", code, out, errOut)
	}

	out = x.must("submit", "slurm", "./examples/wordcount", "--dry-run", "--dry-run-format", "slurm", "--", "--containers", "2")
	for _, want := range []string{"sbatch '--parsable' '--job-name=egret-wordcount'", "'--ntasks=3'", "'" + egret + "' 'executor' '--topology' 'wordcount'", "--package-uri' 'file://"} {
		if !strings.Contains(out, want) {
			t.Errorf("submit --dry-run --dry-run-format slurm printed no %q:\n%s", want, out)
		}
	}
	if ids, _ := c.JobsNamed(context.Background(), slurm.JobName("wordcount")); len(ids) != 0 {
		t.Fatalf("the dry run submitted jobs %v", ids)
	}

	out = x.must("submit", "slurm", "./examples/wordcount", "--wait", "3m", "--", "--containers", "2", "--rate", "200")
	if !strings.Contains(out, "is running") {
		t.Fatalf("submit did not report a running topology:\n%s", out)
	}
	killed := false
	defer func() {
		if !killed {
			x.run("kill", "slurm", "wordcount")
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
	var last float64
	waitFor(t, "word counts to rise", 3*time.Minute, func() bool { last = x.executed(); return last > 0 })
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
	before := x.executed()
	waitFor(t, "counts to rise after the kill -9", 3*time.Minute, func() bool { return x.executed() > before })

	// restart of container 2 only.
	containers = observe()
	x.must("restart", "slurm", "wordcount", "2")
	waitFor(t, "container 2 to be restarted", 2*time.Minute, func() bool {
		now := observe()
		return now[2] != "" && now[2] != containers[2]
	})
	if now := observe(); now[0] != containers[0] || now[1] != containers[1] {
		t.Errorf("restart of container 2 touched the others: %v, were %v", now, containers)
	}
	before = x.executed()
	waitFor(t, "counts to rise after the restart", 3*time.Minute, func() bool { return x.executed() > before })

	// restart of every container, in place.
	containers = observe()
	x.must("restart", "slurm", "wordcount")
	waitFor(t, "every container to be restarted", 2*time.Minute, func() bool {
		now := observe()
		return len(now) == 3 && now[0] != containers[0] && now[1] != containers[1] && now[2] != containers[2]
	})
	before = x.executed()
	waitFor(t, "counts to rise after restarting every container", 3*time.Minute, func() bool { return x.executed() > before })

	// update to 3 containers: a new job with the new plan replaces the old.
	oldJobs, _ := c.JobsNamed(ctx, slurm.JobName("wordcount"))
	// The restarted topology manager refuses to deactivate the topology
	// (and the update rolls back) until every stream manager registered
	// with it again, which can take longer than the counts take to rise.
	waitFor(t, "the update to be accepted by the restarted topology manager", 2*time.Minute, func() bool {
		out, errOut, code := x.run("update", "slurm", "wordcount", "--container-number", "3")
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
	before = x.executed()
	waitFor(t, "counts to rise on 3 containers", 3*time.Minute, func() bool { return x.executed() > before })

	if out := x.must("list", "slurm"); !strings.Contains(out, "wordcount") {
		t.Errorf("list does not show wordcount:\n%s", out)
	}
	x.must("kill", "slurm", "wordcount")
	killed = true
	if ids, err := c.JobsNamed(ctx, slurm.JobName("wordcount")); err != nil || len(ids) != 0 {
		t.Errorf("after kill squeue lists jobs %v (%v)", ids, err)
	}
	waitFor(t, "every process of the topology to end", time.Minute, func() bool { return len(processesUnder(work)) == 0 })
	leftOver(t, work)
	if out, _, _ := x.run("list", "slurm"); strings.Contains(out, "wordcount") {
		t.Errorf("the state survived kill:\n%s", out)
	}
}
