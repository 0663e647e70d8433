package local_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/schedulers/internal/executorcmd"
	"github.com/egret-stream/egret/schedulers/local"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

// fakeEgret is the testdata/fakeegret binary TestMain builds.
var fakeEgret string

// pluginDir holds the plugin binary serving local.New, named pluginName.
var pluginDir string

const pluginName = "localtest"

// raceLogs is where race-enabled fakeegret processes report data races.
var raceLogs string

const pidLogEnv = "FAKEEGRET_PIDLOG"

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if bin := os.Getenv(fakeEgretEnv); bin != "" {
		// A helper child of TestKillOrphanedService: it uses the parent's
		// binaries, which outlive it. Binaries of its own would be removed
		// when it exits, under the service it started.
		fakeEgret = bin
		return m.Run()
	}
	// Executors orphaned by a SIGKILLed service are re-parented to this
	// process rather than to an init that may never reap them, so that
	// alive can reap them and tell dead from zombie.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "local_test: prctl(PR_SET_CHILD_SUBREAPER):", errno)
		return 1
	}
	dir, err := os.MkdirTemp("", "egret-local-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "local_test:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	fakeEgret = filepath.Join(dir, "fakeegret")
	pluginDir = dir
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
		raceLogs = filepath.Join(dir, "race")
		os.Setenv("GORACE", "atexit_sleep_ms=0 log_path="+raceLogs)
	}
	build := exec.Command("go", append(args, "./testdata/fakeegret", "./testdata/"+plugins.BinaryName(spi.KindScheduler, pluginName))...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "local_test: build the test binaries: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	if raceLogs != "" {
		reports, _ := filepath.Glob(raceLogs + ".*")
		for _, r := range reports {
			b, _ := os.ReadFile(r)
			fmt.Fprintf(os.Stderr, "local_test: data race in a fakeegret process (%s):\n%s\n", r, b)
			code = 1
		}
	}
	return code
}

const prSetChildSubreaper = 36

// env is one test's set of topologies: their working directories are
// root/<topology>, and every fakeegret process they start is logged to
// pidLog and killed by pid when the test ends.
type env struct {
	root, pidLog string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{root: t.TempDir(), pidLog: filepath.Join(t.TempDir(), "pids.jsonl")}
	t.Setenv(pidLogEnv, e.pidLog)
	t.Cleanup(func() { e.reap(t) }) // before the directories are removed
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(e.root, "*", "scheduler.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, b)
			}
		}
	})
	return e
}

func (e *env) workDir(topology string) string { return filepath.Join(e.root, topology) }

func (e *env) config(topology string) spi.Config {
	return spi.Config{
		"egret.scheduler.local.working.directory": e.workDir(topology),
		"egret.scheduler.local.egret.binary":      fakeEgret,
	}
}

func (e *env) scheduler(t *testing.T, topology string) spi.Scheduler {
	t.Helper()
	s, err := local.New(e.config(topology), zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("local.New: %v", err)
	}
	return s
}

// record is a line of the pid log (see testdata/fakeegret).
type record struct {
	PID       int    `json:"pid"`
	Role      string `json:"role"`
	Topology  string `json:"topology"`
	Container int    `json:"container"`
	WorkDir   string `json:"work_dir"`
	Start     int64  `json:"start"`
}

func (e *env) records() ([]record, error) {
	f, err := os.Open(e.pidLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue // a line being written
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// executors returns the executors of topology started so far, in start
// order.
func (e *env) executors(topology string) ([]record, error) {
	rs, err := e.records()
	var out []record
	for _, r := range rs {
		if r.Role == "executor" && r.Topology == topology {
			out = append(out, r)
		}
	}
	return out, err
}

// containers is the suite's observer: the live executors of topology by
// container, identified by pid. Two live executors of one container are an
// error.
func (e *env) containers(_ context.Context, topology string) (map[int]string, error) {
	rs, err := e.executors(topology)
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, r := range rs {
		if !alive(r.PID) {
			continue
		}
		pid := strconv.Itoa(r.PID)
		if prev, dup := out[r.Container]; dup && prev != pid {
			return nil, fmt.Errorf("container %d has two live executors, pids %s and %s", r.Container, prev, pid)
		}
		out[r.Container] = pid
	}
	return out, nil
}

// reap kills every fakeegret process the test started that still runs,
// and waits until kill(pid, 0) says each is gone. A process still running
// when a test that passed ends is a leak, reported as an error.
func (e *env) reap(t *testing.T) {
	rs, err := e.records()
	if err != nil {
		t.Errorf("read the pid log: %v", err)
	}
	var left []record
	for _, r := range rs {
		if alive(r.PID) && isFakeEgret(r.PID) {
			left = append(left, r)
			_ = syscall.Kill(r.PID, syscall.SIGKILL)
		}
	}
	if len(left) > 0 && !t.Failed() {
		t.Errorf("%d processes still ran at the end of the test: %+v", len(left), left)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range left {
		for alive(r.PID) {
			if time.Now().After(deadline) {
				t.Errorf("process %d (%s of %s) survived SIGKILL", r.PID, r.Role, r.WorkDir)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// alive reports whether pid runs: kill(pid, 0) succeeds and it is not a
// zombie. A zombie child of this process (an orphaned executor) is reaped.
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ppid ...; comm may contain spaces and parentheses.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 2 || fields[0] != "Z" {
		return true
	}
	if ppid, _ := strconv.Atoi(fields[1]); ppid == os.Getpid() {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
	return false
}

// isFakeEgret guards the cleanup against a recycled pid.
func isFakeEgret(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.TrimSuffix(exe, " (deleted)") == fakeEgret
}

// waitUntil polls cond every 20ms until it holds, failing t after 20s.
func waitUntil(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last error: %v)", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// launch starts a job of n containers and waits for containers 0..n.
func (e *env) launch(t *testing.T, topology string, n int) (spi.Job, map[int]string) {
	t.Helper()
	job := schedulertest.NewJob(topology, n)
	s := e.scheduler(t, topology)
	if err := s.(spi.Launcher).Launch(context.Background(), job); err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(func() {
		// Bounded: a wedged service is left to reap, which kills it by pid.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Kill(ctx, topology)
	})
	var got map[int]string
	waitUntil(t, fmt.Sprintf("containers 0..%d of %s", n, topology), func() (bool, error) {
		var err error
		got, err = e.containers(context.Background(), topology)
		return err == nil && len(got) == n+1, err
	})
	return job, got
}

func (e *env) endpoint(t *testing.T, topology string) (url string, pid int) {
	t.Helper()
	var ep struct {
		URL string `json:"url"`
		PID int    `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(e.workDir(topology), "scheduler.json"))
	if err == nil {
		err = json.Unmarshal(b, &ep)
	}
	if err != nil || ep.URL == "" || ep.PID <= 0 {
		t.Fatalf("read scheduler.json: %v (%s)", err, b)
	}
	return ep.URL, ep.PID
}

func TestConformance(t *testing.T) {
	e := newEnv(t)
	schedulertest.Run(t, e.harness(e.scheduler))
}

// harness is the conformance harness of the local scheduler, with its
// fault hooks: a lost container is an executor killed with SIGKILL (the
// service restarts it); a failover is the SIGKILL of every topology's
// scheduler service (the executors keep running, and the next operation
// starts a service that adopts them).
func (e *env) harness(newSched func(t *testing.T, topology string) spi.Scheduler) schedulertest.Harness {
	return schedulertest.Harness{
		New:          newSched,
		Containers:   e.containers,
		Timeout:      20 * time.Second,
		StrictErrors: true,
		LoseContainer: func(ctx context.Context, topology string, container int) error {
			running, err := e.containers(ctx, topology)
			if err != nil {
				return err
			}
			pid, err := strconv.Atoi(running[container])
			if err != nil {
				return fmt.Errorf("container %d of %s does not run (%v)", container, topology, running)
			}
			return syscall.Kill(pid, syscall.SIGKILL)
		},
		FailOver: func(t *testing.T) {
			dirs, _ := filepath.Glob(filepath.Join(e.root, "*", "scheduler.json"))
			for _, d := range dirs {
				e.killService(t, filepath.Base(filepath.Dir(d)))
			}
		},
		Impossible: map[string]string{
			"Unplaceable": "the local scheduler runs every container on this machine and checks no resources: nothing is ever unplaceable",
		},
	}
}

// TestConformanceOverPlugin runs the suite against the local scheduler
// served by a plugin binary, loaded the way the CLI loads a scheduler that
// is not built in. Every operation starts a plugin process.
func TestConformanceOverPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a plugin process per operation")
	}
	e := newEnv(t)
	loader := plugins.NewLoader(pluginDir, zap.NewNop())
	t.Cleanup(func() { _ = loader.Close() })
	schedulertest.Run(t, e.harness(func(t *testing.T, topology string) spi.Scheduler {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		s, err := loader.LoadScheduler(ctx, pluginName, e.config(topology))
		if err != nil {
			t.Fatalf("load the scheduler plugin: %v", err)
		}
		return s
	}))
}

func TestNewNeedsWorkingDirectory(t *testing.T) {
	_, err := local.New(spi.Config{}, zaptest.NewLogger(t))
	if err == nil || !strings.Contains(err.Error(), "egret.scheduler.local.working.directory") {
		t.Fatalf("New without a working directory: %v, want an error naming the key", err)
	}
}

func TestExecutorArgsAndFiles(t *testing.T) {
	e := newEnv(t)
	job, _ := e.launch(t, "args", 2)
	w := e.workDir("args")
	for i := 0; i <= 2; i++ {
		dir := filepath.Join(w, fmt.Sprintf("container-%d", i))
		b, err := os.ReadFile(filepath.Join(dir, "argv.json"))
		if err != nil {
			t.Fatal(err)
		}
		var argv []string
		if err := json.Unmarshal(b, &argv); err != nil {
			t.Fatal(err)
		}
		want := executorcmd.Args(job, i, dir, filepath.Join(w, local.ConfigFile))
		if want[0] != "executor" || !slices.Equal(argv, want[1:]) {
			t.Errorf("container %d ran with %q, want %q", i, argv, want)
		}
	}
	var cfg spi.Config
	b, err := os.ReadFile(filepath.Join(w, local.ConfigFile))
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil || !slices.Equal(cfg.Keys(), job.Config.Keys()) || cfg["egret.topology.name"] != "args" {
		t.Errorf("%s = %s (%v), want the job's config %v", local.ConfigFile, b, err, job.Config)
	}

	s := e.scheduler(t, "args")
	status, err := s.(*local.Scheduler).Containers(context.Background())
	if err != nil {
		t.Fatalf("Containers: %v", err)
	}
	observed, _ := e.containers(context.Background(), "args")
	if len(status) != 3 {
		t.Fatalf("status lists %d containers, want 3: %+v", len(status), status)
	}
	for _, st := range status {
		if strconv.Itoa(st.PID) != observed[st.Container] || st.Restarts != 0 {
			t.Errorf("status %+v disagrees with the running executors %v", st, observed)
		}
	}
	links, err := s.JobLinks(context.Background(), "args")
	if err != nil || !slices.Equal(links, []string{"file://" + w}) {
		t.Errorf("JobLinks = %q, %v; want the working directory", links, err)
	}
	if err := s.Kill(context.Background(), "args"); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if _, err := os.Stat(w); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Kill left the working directory: %v", err)
	}
}

func TestDeadExecutorRestartedWithBackoff(t *testing.T) {
	e := newEnv(t)
	_, before := e.launch(t, "crash", 1)
	pid1, _ := strconv.Atoi(before[1])
	if err := syscall.Kill(pid1, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var after map[int]string
	waitUntil(t, "a new executor of container 1", func() (bool, error) {
		var err error
		after, err = e.containers(context.Background(), "crash")
		return err == nil && after[1] != "" && after[1] != before[1], err
	})
	if after[0] != before[0] {
		t.Errorf("container 0 changed from pid %s to %s when container 1 died", before[0], after[0])
	}
	s := e.scheduler(t, "crash").(*local.Scheduler)
	restarts := func(container int) int {
		st, err := s.Containers(context.Background())
		if err != nil {
			t.Fatalf("Containers: %v", err)
		}
		for _, c := range st {
			if c.Container == container {
				return c.Restarts
			}
		}
		t.Fatalf("status has no container %d: %+v", container, st)
		return 0
	}
	if n := restarts(1); n != 1 {
		t.Errorf("container 1 restarted %d times, want 1", n)
	}

	// Make container 1 crash at start: the service keeps restarting it,
	// waiting longer each time (100ms doubling to 800ms in fakeegret).
	crash := filepath.Join(e.workDir("crash"), "container-1", "exit-at-once")
	if err := os.WriteFile(crash, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	seen, _ := e.executors("crash")
	pid1, _ = strconv.Atoi(after[1])
	if err := syscall.Kill(pid1, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var starts []time.Time
	waitUntil(t, "five crashing starts of container 1", func() (bool, error) {
		rs, err := e.executors("crash")
		starts = starts[:0]
		for _, r := range rs[len(seen):] {
			if r.Container == 1 {
				starts = append(starts, time.Unix(0, r.Start))
			}
		}
		return len(starts) >= 5, err
	})
	var gaps []time.Duration
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-1]))
	}
	t.Logf("gaps between the restarts of the crashing container: %v", gaps)
	// A restart never comes before the initial backoff, and the delay
	// doubles up to the maximum: after four crashes it has reached it.
	for _, g := range gaps {
		if g < 100*time.Millisecond {
			t.Errorf("restart gaps %v: a restart came sooner than the 100ms initial backoff", gaps)
			break
		}
	}
	if last := gaps[len(gaps)-1]; last < 800*time.Millisecond {
		t.Errorf("restart gaps %v: the delay did not grow to the 800ms maximum", gaps)
	}
	if err := os.Remove(crash); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "container 1 to run again", func() (bool, error) {
		got, err := e.containers(context.Background(), "crash")
		return err == nil && got[1] != "" && got[0] == before[0], err
	})
	if n := restarts(1); n < 6 {
		t.Errorf("container 1 restarted %d times, want at least 6", n)
	}
	if n := restarts(0); n != 0 {
		t.Errorf("container 0 restarted %d times, want 0", n)
	}
}

// killService SIGKILLs a topology's scheduler service and waits until it
// is gone.
func (e *env) killService(t *testing.T, topology string) int {
	t.Helper()
	_, pid := e.endpoint(t, topology)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the service to die", func() (bool, error) { return !alive(pid), nil })
	return pid
}

// TestServiceKilledContainersSurvive: the containers outlive a service
// that is SIGKILLed; Probe says so; Restart starts a new service, which
// adopts the running executors (and supervises them: one that dies is
// restarted) and restarts the container asked for.
func TestServiceKilledContainersSurvive(t *testing.T) {
	e := newEnv(t)
	_, before := e.launch(t, "orphan", 2)
	s := e.scheduler(t, "orphan")
	if err := s.(spi.Prober).Probe(context.Background(), "orphan"); err != nil {
		t.Fatalf("Probe of a running service: %v", err)
	}
	old := e.killService(t, "orphan")
	got, err := e.containers(context.Background(), "orphan")
	if err != nil || !maps.Equal(got, before) {
		t.Fatalf("after the service died the containers are %v (%v), want the same executors %v", got, err, before)
	}
	err = s.(spi.Prober).Probe(context.Background(), "orphan")
	if err == nil || !strings.Contains(err.Error(), "service of \"orphan\" is not running") || !strings.Contains(err.Error(), "egret restart") {
		t.Fatalf("Probe of a dead service: %v, want it to say so and how to fix it", err)
	}
	if err := s.Update(context.Background(), schedulertest.NewJob("orphan", 2)); err == nil {
		t.Error("Update without a service succeeded")
	}

	if err := s.Restart(context.Background(), "orphan", 1); err != nil {
		t.Fatalf("Restart of container 1 without a service: %v", err)
	}
	_, pid := e.endpoint(t, "orphan")
	if pid == old || !alive(pid) {
		t.Fatalf("no new service after Restart (pid %d, old %d)", pid, old)
	}
	if err := s.(spi.Prober).Probe(context.Background(), "orphan"); err != nil {
		t.Errorf("Probe after Restart: %v", err)
	}
	var after map[int]string
	waitUntil(t, "a new executor of container 1", func() (bool, error) {
		after, err = e.containers(context.Background(), "orphan")
		return err == nil && len(after) == 3 && after[1] != before[1], err
	})
	if after[0] != before[0] || after[2] != before[2] {
		t.Errorf("containers 0 and 2 changed from %v to %v: the new service did not adopt them", before, after)
	}
	// The new service supervises the executor it adopted.
	pid2, _ := strconv.Atoi(after[2])
	if err := syscall.Kill(pid2, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the adopted container 2 to be restarted", func() (bool, error) {
		got, err := e.containers(context.Background(), "orphan")
		return err == nil && got[2] != "" && got[2] != after[2], err
	})
}

// TestKillWithoutService: Kill stops the executors of a service that
// died, and removes the working directory.
func TestKillWithoutService(t *testing.T) {
	e := newEnv(t)
	e.launch(t, "orphan", 2)
	e.killService(t, "orphan")
	// A service killed between starting an executor and recording it: Kill
	// finds that executor by its command line.
	if err := os.Remove(filepath.Join(e.workDir("orphan"), "container-1", "executor.json")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.scheduler(t, "orphan").Kill(ctx, "orphan"); err != nil {
		t.Fatalf("Kill after the service died: %v", err)
	}
	if got, err := e.containers(context.Background(), "orphan"); err != nil || len(got) != 0 {
		t.Errorf("after Kill the containers are %v (%v), want none", got, err)
	}
	if _, err := os.Stat(e.workDir("orphan")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Kill left the working directory: %v", err)
	}
	err := e.scheduler(t, "orphan").(spi.Prober).Probe(context.Background(), "orphan")
	if !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("Probe of a killed topology: %v, want spi.ErrNotFound", err)
	}
}

func TestServiceRejectsBadRequests(t *testing.T) {
	e := newEnv(t)
	job, before := e.launch(t, "http", 2)
	url, _ := e.endpoint(t, "http")
	other, err := json.Marshal(schedulertest.NewJob("another", 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, body string
		want             []string // in the response body
	}{
		{"malformed update", "/update", `{"Topology": "http", "Plan": [`, []string{"not a job"}},
		{"update of another topology", "/update", string(other), []string{"another topology"}},
		{"unknown container", "/restart?container=99", "", []string{`"99"`, "[0 1 2]"}},
		{"container not a number", "/restart?container=one", "", []string{`"one"`, "[0 1 2]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(url+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status %s, want 400 Bad Request (body %q)", resp.Status, b)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("body %q does not contain %q", b, w)
				}
			}
		})
	}
	after, err := e.containers(context.Background(), "http")
	if err != nil || len(after) != 3 || after[0] != before[0] || after[1] != before[1] || after[2] != before[2] {
		t.Errorf("bad requests changed the containers from %v to %v (%v)", before, after, err)
	}
	b, err := os.ReadFile(filepath.Join(e.workDir("http"), "job.json"))
	var stored spi.Job
	if err == nil {
		err = json.Unmarshal(b, &stored)
	}
	if err != nil || stored.Topology != job.Topology || len(stored.Plan.Containers) != 2 {
		t.Errorf("job.json changed by a rejected update: %s (%v)", b, err)
	}
}

func TestLaunchReportsAServiceThatDoesNotStart(t *testing.T) {
	falseBin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false(1) on this machine")
	}
	for _, tc := range []struct {
		name, binary, want string
	}{
		{"missing binary", filepath.Join(t.TempDir(), "no-such-egret"), "start the service"},
		{"service exits at once", falseBin, "the service exited at start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "broken")
			s, err := local.New(spi.Config{
				"egret.scheduler.local.working.directory": dir,
				"egret.scheduler.local.egret.binary":      tc.binary,
			}, zaptest.NewLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			err = s.(spi.Launcher).Launch(context.Background(), schedulertest.NewJob("broken", 1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Launch = %v, want an error containing %q", err, tc.want)
			}
			if err := s.Kill(context.Background(), "broken"); err != nil {
				t.Fatalf("Kill after a failed launch: %v", err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Kill left the working directory: %v", err)
			}
		})
	}
}

func TestConcurrentRestarts(t *testing.T) {
	e := newEnv(t)
	_, before := e.launch(t, "storm", 1)
	url, _ := e.endpoint(t, "storm")
	// Restart requests racing with the restarts they cause must neither
	// wedge a container nor start it twice.
	for round := 0; round < 20; round++ {
		errs := make(chan error, 4)
		for i := 0; i < 4; i++ {
			go func() {
				resp, err := http.Post(url+"/restart?container=1", "", nil)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("restart: %s", resp.Status)
					}
				}
				errs <- err
			}()
		}
		for i := 0; i < 4; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	waitUntil(t, "container 1 to run after the restarts", func() (bool, error) {
		got, err := e.containers(context.Background(), "storm")
		return err == nil && len(got) == 2 && got[1] != before[1] && got[0] == before[0], err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.scheduler(t, "storm").Kill(ctx, "storm"); err != nil {
		t.Fatalf("Kill after the restarts: %v", err)
	}
	got, err := e.containers(context.Background(), "storm")
	if err != nil || len(got) != 0 {
		t.Errorf("after Kill the containers are %v (%v), want none", got, err)
	}
}

const (
	launchHelperEnv = "LOCAL_TEST_LAUNCH_TOPOLOGY"
	fakeEgretEnv    = "LOCAL_TEST_FAKEEGRET"
)

// TestHelperLaunch is run by TestKillOrphanedService in a child process:
// it launches a topology and exits, as `egret submit` does.
func TestHelperLaunch(t *testing.T) {
	topology := os.Getenv(launchHelperEnv)
	if topology == "" {
		t.Skip("run by TestKillOrphanedService")
	}
	e := &env{root: os.Getenv("LOCAL_TEST_ROOT")}
	if err := e.scheduler(t, topology).(spi.Launcher).Launch(context.Background(), schedulertest.NewJob(topology, 1)); err != nil {
		t.Fatal(err)
	}
}

// TestKillOrphanedService kills a topology whose service outlived the
// process that launched it. The service, once stopped, stays a zombie until
// its new parent reaps it (this test process is a subreaper that does not);
// Kill must not take the zombie for a running service.
func TestKillOrphanedService(t *testing.T) {
	e := newEnv(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLaunch$", "-test.count=1")
	cmd.Env = append(os.Environ(), launchHelperEnv+"=orphan", "LOCAL_TEST_ROOT="+e.root, fakeEgretEnv+"="+fakeEgret)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("launch in a child process: %v\n%s", err, out)
	}
	waitUntil(t, "containers 0..1", func() (bool, error) {
		got, err := e.containers(context.Background(), "orphan")
		return err == nil && len(got) == 2, err
	})
	_, pid := e.endpoint(t, "orphan")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.scheduler(t, "orphan").Kill(ctx, "orphan"); err != nil {
		t.Fatalf("Kill of an orphaned service: %v", err)
	}
	if _, err := os.Stat(e.workDir("orphan")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Kill left the working directory: %v", err)
	}
	if alive(pid) { // reaps the zombie
		t.Errorf("the service (pid %d) still runs", pid)
	}
}
