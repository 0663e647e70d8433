package slurm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/schedulertest"
	"github.com/egret-stream/egret/schedulers/slurm"
	"github.com/egret-stream/egret/schedulers/slurm/slurmtest"
)

func newScheduler(t *testing.T, cfg spi.Config) spi.Scheduler {
	t.Helper()
	s, err := slurm.New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func withKeys(cfg spi.Config, kv map[string]string) spi.Config {
	out := cfg.Clone()
	for k, v := range kv {
		out[k] = v
	}
	return out
}

// unreachable writes a copy of the cluster's slurm.conf whose controller
// port nothing listens on, and a wrapper of cmd that uses it.
func unreachable(t *testing.T, cmd string) string {
	t.Helper()
	dir := t.TempDir()
	conf, err := os.ReadFile(cluster.Conf)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(conf), "\n") {
		if strings.HasPrefix(l, "SlurmctldPort=") {
			l = "SlurmctldPort=1"
		}
		lines = append(lines, l)
	}
	bad := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, cmd)
	script := "#!/bin/sh\nSLURM_CONF=" + bad + " exec " + cluster.Bin(cmd) + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// TestBadInput submits what Slurm cannot run: each fails with one line
// saying why, and leaves no job and no file behind.
func TestBadInput(t *testing.T) {
	c := needCluster(t)
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) map[string]string
		edit func(*spi.Job)
		want string
	}{
		{"UnknownPartition", func(*testing.T) map[string]string { return map[string]string{slurm.KeyPartition: "nosuch"} }, nil,
			`partition "nosuch" does not exist (partitions: ` + c.Partition + `)`},
		{"MoreCPUsThanAnyNode", nil, func(j *spi.Job) { j.Plan.Containers[0].Required.CPU = 64 }, "each container needs 64 cpus"},
		{"MoreMemoryThanAnyNode", nil, func(j *spi.Job) { j.Plan.Containers[0].Required.RAM = 64 << 30 }, "more than the largest node"},
		{"MoreContainersThanTheNodesHold", nil, func(j *spi.Job) { *j = schedulertest.NewJob(j.Topology, 12) }, "the topology needs 13 containers"},
		{"OneNodeCannotHoldContainersPerNode", func(*testing.T) map[string]string { return map[string]string{slurm.KeyTasksPerNode: "2"} }, nil,
			"2 per node (egret.slurm.containers.per.node); the 1 usable nodes of partition \"debug\" hold only 2"},
		{"UnreachableController", func(t *testing.T) map[string]string {
			return map[string]string{
				slurm.KeySqueue: unreachable(t, "squeue"), slurm.KeySbatch: unreachable(t, "sbatch"),
				slurm.KeyScontrol: unreachable(t, "scontrol"), slurm.KeyCommandTimeout: "4s",
			}
		}, nil, "slurmctld"},
		{"NoSlurmCommands", func(*testing.T) map[string]string {
			return map[string]string{slurm.KeySqueue: "/nonexistent/squeue"}
		}, nil, "/nonexistent/squeue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, sleeper)
			cfg := f.config()
			if tc.cfg != nil {
				cfg = withKeys(cfg, tc.cfg(t))
			}
			s := newScheduler(t, cfg)
			topo := randomName("bad")
			job := schedulertest.NewJob(topo, 2)
			if tc.edit != nil {
				tc.edit(&job)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			start := time.Now()
			err := s.Schedule(ctx, job)
			if err == nil {
				t.Fatal("Schedule succeeded")
			}
			t.Logf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q: want one line containing %q", msg, tc.want)
			}
			if ids, err := c.JobsNamed(ctx, slurm.JobName(topo)); err != nil || len(ids) != 0 {
				t.Errorf("after the failed submit squeue lists %v (%v)", ids, err)
			}
			if _, err := os.Stat(f.work); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the failed submit left %s (%v)", f.work, err)
			}
		})
	}
}

// TestBadConfig: every bad value is reported at once, before any command
// runs.
func TestBadConfig(t *testing.T) {
	_, err := slurm.New(spi.Config{
		slurm.KeyPartition:      "a,b",
		slurm.KeyAccount:        "x y",
		slurm.KeyQOS:            "q;rm",
		slurm.KeyTimeLimit:      "forever",
		slurm.KeyTasksPerNode:   "-1",
		slurm.KeyEgretBinary:    "bin/egret",
		slurm.KeyWorkingDir:     "/tmp/../etc",
		slurm.KeySbatch:         "bin/sbatch",
		slurm.KeySrun:           "srun -v",
		slurm.KeyLaunchTimeout:  "0s",
		slurm.KeyCommandTimeout: "soon",
	}, nil)
	if err == nil {
		t.Fatal("New accepted the bad config")
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the error is not one line: %q", err)
	}
	for _, key := range []string{slurm.KeyPartition, slurm.KeyAccount, slurm.KeyQOS, slurm.KeyTimeLimit, slurm.KeyTasksPerNode,
		slurm.KeyEgretBinary, slurm.KeyWorkingDir, slurm.KeySbatch, slurm.KeySrun, slurm.KeyLaunchTimeout, slurm.KeyCommandTimeout} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("the error does not name %s: %v", key, err)
		}
	}
}

// TestLaunchTimeout: a job that waits for resources longer than
// egret.slurm.launch.timeout is cancelled and the error says why it waited.
func TestLaunchTimeout(t *testing.T) {
	c := needCluster(t)
	ctx := context.Background()
	// Take all the node's memory (its cpus are shared between jobs).
	hog := randomName("hog")
	if _, err := c.Command(ctx, "sbatch", "--parsable", "--job-name="+hog, "--ntasks=1",
		"--mem="+strconv.FormatInt(c.MemoryMB, 10)+"M", "--output=/dev/null", "--wrap=exec sleep 1000"); err != nil {
		t.Fatal(err)
	}
	defer c.Command(ctx, "scancel", "--name="+hog)
	waitFor(t, "the hog to run", time.Minute, func() bool {
		out, _ := c.Command(ctx, "squeue", "-h", "--name="+hog, "-o", "%T")
		return strings.TrimSpace(out) == "RUNNING"
	})
	f := newFixture(t, sleeper)
	s := newScheduler(t, withKeys(f.config(), map[string]string{slurm.KeyLaunchTimeout: "3s"}))
	topo := randomName("waits")
	start := time.Now()
	err := s.Schedule(ctx, schedulertest.NewJob(topo, 1))
	if err == nil || !strings.Contains(err.Error(), "PENDING (reason Resources) after 3s (egret.slurm.launch.timeout)") || !strings.Contains(err.Error(), "was cancelled") {
		t.Fatalf("Schedule: %v; want the job pending for resources after 3s, cancelled", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("Schedule took %s with a 3s launch timeout", d)
	}
	if ids, _ := c.JobsNamed(ctx, slurm.JobName(topo)); len(ids) != 0 {
		t.Errorf("the timed-out job %v is still there", ids)
	}
}

// TestContainersPerNode: egret.slurm.containers.per.node becomes
// --ntasks-per-node (and the node count), and the job runs so; the time
// limit, account, QoS and partition reach the job (this Slurm has no
// accounting database, so it takes any account, and shows no QoS: --qos is checked in the rendered job only).
func TestContainersPerNode(t *testing.T) {
	c := needCluster(t)
	ctx := context.Background()
	f := newFixture(t, sleeper)
	s := newScheduler(t, withKeys(f.config(), map[string]string{slurm.KeyTasksPerNode: "3", slurm.KeyTimeLimit: "90",
		slurm.KeyAccount: "streaming", slurm.KeyQOS: "normal", slurm.KeyPartition: c.Partition}))
	topo := randomName("pernode")
	if err := s.Schedule(ctx, schedulertest.NewJob(topo, 2)); err != nil {
		t.Fatal(err)
	}
	defer s.Kill(ctx, topo)
	ids, err := c.JobsNamed(ctx, slurm.JobName(topo))
	if err != nil || len(ids) != 1 {
		t.Fatalf("jobs %v, %v", ids, err)
	}
	out, err := c.Command(ctx, "scontrol", "show", "job", "-o", ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(f.work); err != nil || st.Mode()&(os.ModeSticky|os.ModePerm) != os.ModeSticky|os.ModePerm {
		t.Errorf("the working directory the job created: %v, %v; want mode 1777 so that every user's jobs can use it", st.Mode(), err)
	}
	for _, want := range []string{"NumNodes=1", "NumTasks=3", "NtasksPerN:B:S:C=3:", "TimeLimit=01:30:00", "Account=streaming", "Partition=" + c.Partition, "JobName=" + slurm.JobName(topo), "Comment=egret topology " + topo + " id " + topo + "-id"} {
		if !strings.Contains(out, want) {
			t.Errorf("scontrol show job has no %q:\n%s", want, out)
		}
	}
}

// TestRestartWithoutTaskLoop: when the task loop of a container is killed
// itself, Restart of that container says so, and Restart of every
// container requeues the job, which brings every container back.
func TestRestartWithoutTaskLoop(t *testing.T) {
	c := needCluster(t)
	ctx := context.Background()
	f := newFixture(t, sleeper)
	s := newScheduler(t, f.config())
	topo := randomName("noloop")
	if err := s.Schedule(ctx, schedulertest.NewJob(topo, 2)); err != nil {
		t.Fatal(err)
	}
	defer s.Kill(ctx, topo)
	var before map[int]string
	waitFor(t, "containers 0..2", time.Minute, func() bool {
		before, _ = observe(ctx, topo)
		return len(before) == 3
	})
	ids, _ := c.JobsNamed(ctx, slurm.JobName(topo))
	tasks, err := c.Tasks(ctx, ids[0])
	if err != nil || tasks[1] == 0 {
		t.Fatalf("tasks %v, %v", tasks, err)
	}
	// The loop first, then its executor (now an orphan Slurm no longer tracks).
	_, exe, _ := strings.Cut(before[1], "/")
	syscall.Kill(tasks[1], syscall.SIGKILL)
	if n, err := strconv.Atoi(exe); err == nil {
		syscall.Kill(n, syscall.SIGKILL)
	}
	err = s.Restart(ctx, topo, 1)
	if err == nil || !strings.Contains(err.Error(), "no running task loop") {
		t.Fatalf("Restart(1) with its task loop gone: %v", err)
	}
	if err := s.Restart(ctx, topo, spi.AllContainers); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the requeued job to run containers 0..2 again", 2*time.Minute, func() bool {
		now, _ := observe(ctx, topo)
		return len(now) == 3 && now[0] != before[0] && now[2] != before[2]
	})
	out, _ := c.Command(ctx, "scontrol", "show", "job", "-o", ids[0])
	if !strings.Contains(out, "Restarts=1") {
		t.Errorf("the job was not requeued: %s", out)
	}
}

// TestJobLinksAndUpdate: JobLinks gives the job id; an update the cluster
// cannot hold leaves the old job running untouched; an update that fits
// replaces the job; after kill there are no links.
func TestJobLinksAndUpdate(t *testing.T) {
	c := needCluster(t)
	ctx := context.Background()
	f := newFixture(t, sleeper)
	s := newScheduler(t, f.config())
	topo := randomName("links")
	if err := s.Schedule(ctx, schedulertest.NewJob(topo, 1)); err != nil {
		t.Fatal(err)
	}
	defer s.Kill(ctx, topo)
	ids, _ := c.JobsNamed(ctx, slurm.JobName(topo))
	links, err := s.JobLinks(ctx, topo)
	if err != nil || len(links) != 1 || !strings.Contains(links[0], "slurm job "+ids[0]) {
		t.Fatalf("links %q, %v; want slurm job %v", links, err, ids)
	}
	var before map[int]string
	waitFor(t, "containers 0 and 1", time.Minute, func() bool {
		before, _ = observe(ctx, topo)
		return len(before) == 2
	})
	if err := s.Update(ctx, schedulertest.NewJob(topo, 20)); err == nil || !strings.Contains(err.Error(), "the topology needs 21 containers") {
		t.Fatalf("Update to 20 containers on one 8-cpu node: %v", err)
	}
	if now, _ := observe(ctx, topo); now[0] != before[0] || now[1] != before[1] || len(now) != 2 {
		t.Errorf("the refused update touched the job: %v, was %v", now, before)
	}
	if err := s.Update(ctx, schedulertest.NewJob(topo, 2)); err != nil {
		t.Fatal(err)
	}
	now, _ := c.JobsNamed(ctx, slurm.JobName(topo))
	if len(now) != 1 || now[0] == ids[0] {
		t.Errorf("after the update the jobs are %v, want one new job (was %v)", now, ids)
	}
	if err := s.Kill(ctx, topo); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JobLinks(ctx, topo); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("JobLinks of a killed topology: %v; want spi.ErrNotFound", err)
	}
}

// TestCommandPaths: the scheduler runs the commands its keys name (here
// scancel and srun, missing), says which key to fix, and changes nothing.
func TestCommandPaths(t *testing.T) {
	c := needCluster(t)
	ctx := context.Background()
	f := newFixture(t, sleeper)
	s := newScheduler(t, f.config())
	topo := randomName("paths")
	if err := s.Schedule(ctx, schedulertest.NewJob(topo, 1)); err != nil {
		t.Fatal(err)
	}
	defer s.Kill(ctx, topo)
	var before map[int]string
	waitFor(t, "containers 0 and 1", time.Minute, func() bool {
		before, _ = observe(ctx, topo)
		return len(before) == 2
	})
	for key, op := range map[string]func(spi.Scheduler) error{
		slurm.KeyScancel: func(s spi.Scheduler) error { return s.Kill(ctx, topo) },
		slurm.KeySrun:    func(s spi.Scheduler) error { return s.Restart(ctx, topo, 1) },
	} {
		broken := newScheduler(t, withKeys(f.config(), map[string]string{key: "/nonexistent/cmd"}))
		err := op(broken)
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/cmd") || !strings.Contains(err.Error(), key) {
			t.Errorf("with %s missing: %v; want an error naming the path and the key", key, err)
		}
	}
	if ids, _ := c.JobsNamed(ctx, slurm.JobName(topo)); len(ids) != 1 {
		t.Errorf("jobs %v after the failed calls, want the one job", ids)
	}
	if now, _ := observe(ctx, topo); now[0] != before[0] || now[1] != before[1] {
		t.Errorf("the failed calls touched the containers: %v, were %v", now, before)
	}
}

// TestDiagnose: an executor that keeps failing is named, with its exit
// status, from the job's log.
func TestDiagnose(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	f := newFixture(t, "#!/bin/sh\necho boom >&2\nexit 3\n")
	s := newScheduler(t, f.config())
	topo := randomName("diag")
	if err := s.Schedule(ctx, schedulertest.NewJob(topo, 1)); err != nil {
		t.Fatal(err)
	}
	defer s.Kill(ctx, topo)
	var why string
	waitFor(t, "a diagnosis", time.Minute, func() bool {
		var err error
		why, err = s.(spi.Diagnoser).Diagnose(ctx, topo)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(why, "container 0: executor exited with status 3") && strings.Contains(why, "container 1: executor exited with status 3")
	})
	t.Log(why)
	if strings.Contains(why, "\n") {
		t.Errorf("the diagnosis is not one line: %q", why)
	}
}

// commandsOf writes wrappers of the Slurm commands that use cluster c2's
// slurm.conf, and returns the config keys that select them.
func commandsOf(t *testing.T, c2 *slurmtest.Cluster) map[string]string {
	t.Helper()
	dir := t.TempDir()
	keys := map[string]string{}
	for key, cmd := range map[string]string{slurm.KeySbatch: "sbatch", slurm.KeySqueue: "squeue", slurm.KeyScancel: "scancel", slurm.KeyScontrol: "scontrol", slurm.KeySrun: "srun"} {
		w := filepath.Join(dir, cmd)
		if err := os.WriteFile(w, []byte("#!/bin/sh\nSLURM_CONF="+c2.Conf+" exec "+c2.Bin(cmd)+" \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		keys[key] = w
	}
	return keys
}

// TestTwoNodes runs a topology on a second cluster of two nodes (two
// slurmd on this host): egret.slurm.containers.per.node 2 spreads the 4
// containers over both, restart of one container (on the second node)
// replaces only it, restart of all replaces every executor, and kill
// leaves no process and no directory on either node.
func TestTwoNodes(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	// Not t.TempDir: munged wants every directory above its socket
	// reachable by everyone.
	dir, err := os.MkdirTemp("", "egret-slurm2-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c2, err := slurmtest.Start(ctx, slurmtest.Options{Dir: dir, Nodes: 2, CPUs: 4, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Stop()
	f := newFixture(t, sleeper)
	keys := commandsOf(t, c2)
	keys[slurm.KeyTasksPerNode] = "2"
	s := newScheduler(t, withKeys(f.config(), keys))
	topo := randomName("two")
	if err := s.Schedule(ctx, schedulertest.NewJob(topo, 3)); err != nil {
		t.Fatal(err)
	}
	defer s.Kill(ctx, topo)
	// try is one look at the containers; a step that starts or ends while
	// scontrol lists it is an error of that look only (polled again).
	try := func() (map[int]string, bool) {
		got, err := c2.Containers(ctx, slurm.JobName(topo), isSleeper)
		if err != nil {
			t.Logf("listing the containers: %v (polling again)", err)
			return nil, false
		}
		return got, true
	}
	obs := func() map[int]string {
		got, err := c2.Containers(ctx, slurm.JobName(topo), isSleeper)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	var before map[int]string
	waitFor(t, "containers 0..3", time.Minute, func() bool { m, ok := try(); before = m; return ok && len(m) == 4 })
	out, err := c2.Command(ctx, "squeue", "-h", "--name="+slurm.JobName(topo), "-o", "%D %N")
	if err != nil || strings.TrimSpace(out) != "2 n[1-2]" {
		t.Errorf("the job runs on %q (%v), want both nodes", out, err)
	}
	if err := s.Restart(ctx, topo, 3); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "container 3 to be restarted", time.Minute, func() bool {
		now, ok := try()
		return ok && len(now) == 4 && now[3] != before[3]
	})
	if now := obs(); now[0] != before[0] || now[1] != before[1] || now[2] != before[2] {
		t.Errorf("restart of container 3 touched others: %v, were %v", now, before)
	}
	before = obs()
	if err := s.Restart(ctx, topo, spi.AllContainers); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every container to be restarted", time.Minute, func() bool {
		now, ok := try()
		return ok && len(now) == 4 && now[0] != before[0] && now[1] != before[1] && now[2] != before[2] && now[3] != before[3]
	})
	if err := s.Kill(ctx, topo); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every process of the topology to end", time.Minute, func() bool { return len(processesUnder(f.work)) == 0 })
	leftOver(t, f.work)
}

// leftOver fails t when dir (a working directory the jobs removed theirs
// from) still holds anything half a minute after kill.
func leftOver(t *testing.T, dir string) {
	t.Helper()
	var names []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		names = names[:0]
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && p != dir {
				names = append(names, p)
			}
			return nil
		})
		if len(names) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(names) != 0 {
		t.Errorf("kill left %v", names)
	}
}
