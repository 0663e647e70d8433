package executor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/internal/fetch"
	"github.com/egret-stream/egret/statemgr/memory"
)

// The test binary doubles as the fake `egret` binary, the fake topology
// binary (through a shell script in the package) and, for the Pdeathsig
// test, as an executor process.
const (
	// envFake: run as a fake daemon recording into this directory.
	envFake = "EGRET_EXECUTOR_TEST_FAKE"
	// envExecutor: run as an executor configured by this JSON (execSpec).
	envExecutor = "EGRET_EXECUTOR_TEST_EXECUTOR"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envFake); dir != "" {
		os.Exit(fakeMain(dir, os.Args[1:]))
	}
	if spec := os.Getenv(envExecutor); spec != "" {
		os.Exit(executorMain(spec))
	}
	os.Exit(m.Run())
}

// fakeName names a fake process by its command line: the daemon
// sub-command, or task-<T> for an instance.
func fakeName(args []string) string {
	if len(args) > 0 && (args[0] == "tmanager" || args[0] == "metricsmgr" || args[0] == "stmgr" || args[0] == "shell" || args[0] == "healthmgr") {
		return args[0]
	}
	if i := slices.Index(args, "--task"); i >= 0 && i+1 < len(args) {
		return "task-" + args[i+1]
	}
	return "unknown"
}

// fakeMain is a fake daemon. It records its arguments in dir/argv/<name>.<pid>,
// writes as many 64-byte lines to stderr as dir/chatter-<name> says, then:
//   - crashes like the Go runtime out of memory (exit 2) once if it can
//     remove dir/gooom-<name>;
//   - exits with the code in dir/exit-<name> if that file exists;
//   - exits with the code in dir/exitonce-<name> if it can remove that file;
//   - otherwise writes dir/ready/<name>.<pid> and waits for SIGTERM (exit 0),
//     or forever if dir/ignoreterm-<name> exists.
func fakeMain(dir string, args []string) int {
	name := fakeName(args)
	id := fmt.Sprintf("%s.%d", name, os.Getpid())
	b, _ := json.Marshal(args)
	if err := writeTestFile(filepath.Join(dir, "argv", id), b); err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return 99
	}
	wd, _ := os.Getwd()
	b, _ = json.Marshal(map[string]string{"GOMAXPROCS": os.Getenv("GOMAXPROCS"), "GOMEMLIMIT": os.Getenv("GOMEMLIMIT"), "cwd": wd})
	if err := writeTestFile(filepath.Join(dir, "env", id), b); err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return 99
	}
	if b, err := os.ReadFile(filepath.Join(dir, "chatter-"+name)); err == nil {
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		w := bufio.NewWriter(os.Stderr)
		for i := range n {
			fmt.Fprintf(w, "fake %s: chatter line %08d %s\n", name, i, strings.Repeat("x", 64-len(name)-32))
		}
		_ = w.Flush()
	}
	gooom := filepath.Join(dir, "gooom-"+name)
	if os.Remove(gooom) == nil {
		// What the Go runtime prints when an allocation fails.
		fmt.Fprintln(os.Stderr, "fatal error: runtime: out of memory")
		return 2
	}
	if b, err := os.ReadFile(filepath.Join(dir, "exit-"+name)); err == nil {
		code, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		fmt.Fprintf(os.Stderr, "fake %s: exiting with %d\n", name, code)
		return code
	}
	once := filepath.Join(dir, "exitonce-"+name)
	if b, err := os.ReadFile(once); err == nil && os.Remove(once) == nil {
		code, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		fmt.Fprintf(os.Stderr, "fake %s: exiting once with %d\n", name, code)
		return code
	}
	sigs := make(chan os.Signal, 1)
	if _, err := os.Stat(filepath.Join(dir, "ignoreterm-"+name)); err == nil {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(sigs, syscall.SIGTERM)
	}
	if err := writeTestFile(filepath.Join(dir, "ready", id), nil); err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return 99
	}
	fmt.Fprintf(os.Stderr, "fake %s: running\n", name)
	go misbehave(dir, name, id)
	<-sigs
	fmt.Fprintf(os.Stderr, "fake %s: got SIGTERM\n", name)
	return 0
}

func writeTestFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// execSpec configures executorMain.
type execSpec struct {
	WorkDir, PackageURI, PackageSHA256, Egret, Fake string
	Container                                       int
	Plan                                            map[int][]string
}

// executorMain runs an executor in this process with an in-memory state
// manager holding the given plan, until killed.
func executorMain(spec string) int {
	var s execSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "executor spec:", err)
		return 98
	}
	sm := memory.NewStore().NewSession()
	data, err := testPlan(s.Plan).Marshal()
	if err == nil {
		err = sm.Create(context.Background(), state.Path(state.PackingPlansDir, testTopology), data, false)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "executor plan:", err)
		return 98
	}
	cfg := Config{
		TopologyName: testTopology, TopologyID: testID, Container: s.Container,
		WorkDir: s.WorkDir, PackageURI: s.PackageURI, PackageSHA256: s.PackageSHA256,
		EgretBinary: s.Egret, StateManager: sm,
		ExtraEnv: []string{envFake + "=" + s.Fake},
	}
	log, _ := zap.NewDevelopment()
	if err := Run(context.Background(), cfg, log); err != nil {
		fmt.Fprintln(os.Stderr, "executor:", err)
		return 1
	}
	return 0
}

// env is one test's world: a package, a fake directory, a state manager.
type env struct {
	t     *testing.T
	base  string
	fake  string
	work  string
	pkg   string // the package tarball
	sha   string
	store *memory.Store
	sm    *memory.Session

	mu     sync.Mutex
	events []Event
}

const (
	testTopology = "wc"
	testID       = "wc-1"
)

func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func newEnv(t *testing.T) *env {
	t.Helper()
	base := t.TempDir()
	v := &env{t: t, base: base, fake: filepath.Join(base, "fake"), work: filepath.Join(base, "w")}
	src := filepath.Join(base, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", testBinary(t))
	mustWrite(t, filepath.Join(src, "topology"), script, 0o755)
	mustWrite(t, filepath.Join(src, "topology.defn"), "defn", 0o644)
	mustWrite(t, filepath.Join(src, "cluster.json"), `{"egret.statemgr":"memory","egret.executor.stop.grace":"7s"}`, 0o644)
	v.pkg = filepath.Join(base, "topology.tar.gz")
	sha, err := fetch.CreateTarGz(v.pkg, map[string]string{
		"topology":      filepath.Join(src, "topology"),
		"topology.defn": filepath.Join(src, "topology.defn"),
		"cluster.json":  filepath.Join(src, "cluster.json"),
	})
	if err != nil {
		t.Fatal(err)
	}
	v.sha = sha
	v.store = memory.NewStore()
	v.sm = v.store.NewSession()
	t.Cleanup(func() { _ = v.sm.Close() })
	// Safety net: whatever a fake recorded, kill its process group.
	t.Cleanup(func() {
		for _, pid := range v.allFakePids() {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	return v
}

func mustWrite(t *testing.T, path, data string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
}

// control writes a control file read by the fakes (see fakeMain).
func (v *env) control(name, content string) {
	v.t.Helper()
	if err := writeTestFile(filepath.Join(v.fake, name), []byte(content)); err != nil {
		v.t.Fatal(err)
	}
}

func (v *env) config(container int) Config {
	return Config{
		TopologyName:  testTopology,
		TopologyID:    testID,
		Container:     container,
		WorkDir:       v.work,
		PackageURI:    "file://" + v.pkg,
		PackageSHA256: v.sha,
		EgretBinary:   testBinary(v.t),
		StateManager:  v.sm,
		Settings: spi.Config{
			KeyBackoffInitial: "50ms",
			KeyBackoffMax:     "200ms",
			KeyResetAfter:     "1h",
			KeyStopGrace:      "5s",
		},
		ExtraEnv: []string{envFake + "=" + v.fake},
		Hooks:    Hooks{OnEvent: v.record},
	}
}

func (v *env) record(ev Event) {
	v.mu.Lock()
	v.events = append(v.events, ev)
	v.mu.Unlock()
}

// eventsOf returns the recorded events of process (all kinds when kinds
// is empty).
func (v *env) eventsOf(process string, kinds ...EventKind) []Event {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []Event
	for _, ev := range v.events {
		if ev.Process == process && (len(kinds) == 0 || slices.Contains(kinds, ev.Kind)) {
			out = append(out, ev)
		}
	}
	return out
}

// run starts an executor; the returned channel yields Run's result. The
// executor is stopped at cleanup.
func (v *env) run(cfg Config) (*Executor, context.CancelFunc, <-chan error) {
	v.t.Helper()
	e, err := New(cfg, zaptest.NewLogger(v.t))
	if err != nil {
		v.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		errc <- e.Run(ctx)
		close(finished)
	}()
	v.t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
			v.t.Error("executor did not stop")
		}
	})
	return e, cancel, errc
}

func (v *env) setPlan(p *plan.PackingPlan) {
	v.t.Helper()
	data, err := p.Marshal()
	if err != nil {
		v.t.Fatal(err)
	}
	path := state.Path(state.PackingPlansDir, testTopology)
	ctx := context.Background()
	if _, err := v.sm.Set(ctx, path, data, spi.AnyVersion); errors.Is(err, spi.ErrNotFound) {
		err = v.sm.Create(ctx, path, data, false)
		if err != nil {
			v.t.Fatal(err)
		}
	} else if err != nil {
		v.t.Fatal(err)
	}
}

// setEffectivelyOnce writes an effectively-once topology definition.
func (v *env) setEffectivelyOnce() {
	v.t.Helper()
	t := &topology.Topology{Name: testTopology, ID: testID,
		Config:     map[string]string{topology.KeyDeliveryMode: string(topology.EffectivelyOnce)},
		Components: []topology.Component{{Name: "word", Kind: topology.Spout, Parallelism: 1}, {Name: "count", Kind: topology.Bolt, Parallelism: 3}}}
	data, err := topology.Marshal(t)
	if err != nil {
		v.t.Fatal(err)
	}
	if err := v.sm.Create(context.Background(), state.Path(state.TopologiesDir, testTopology), data, false); err != nil {
		v.t.Fatal(err)
	}
}

// testPlan builds a plan: containers[id] lists "component:task" entries.
func testPlan(containers map[int][]string) *plan.PackingPlan {
	p := &plan.PackingPlan{TopologyID: testID}
	ids := make([]int, 0, len(containers))
	for id := range containers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c := plan.Container{ID: id}
		for _, s := range containers[id] {
			comp, task, _ := strings.Cut(s, ":")
			n, _ := strconv.Atoi(task)
			c.Instances = append(c.Instances, plan.Instance{Component: comp, TaskID: n})
		}
		p.Containers = append(p.Containers, c)
	}
	return p
}

// fakePids lists the pids of every run of the named fake.
func (v *env) fakePids(sub, name string) []int {
	ents, _ := os.ReadDir(filepath.Join(v.fake, sub))
	var out []int
	for _, e := range ents {
		n, pid, ok := strings.Cut(e.Name(), ".")
		if !ok || n != name || strings.HasSuffix(pid, ".tmp") {
			continue
		}
		if p, err := strconv.Atoi(pid); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func (v *env) allFakePids() []int {
	ents, _ := os.ReadDir(filepath.Join(v.fake, "argv"))
	var out []int
	for _, e := range ents {
		parts := strings.Split(e.Name(), ".")
		if p, err := strconv.Atoi(parts[len(parts)-1]); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// argv returns what the fake run pid of name was started with.
func (v *env) argv(name string, pid int) []string {
	v.t.Helper()
	b, err := os.ReadFile(filepath.Join(v.fake, "argv", fmt.Sprintf("%s.%d", name, pid)))
	if err != nil {
		v.t.Fatal(err)
	}
	var args []string
	if err := json.Unmarshal(b, &args); err != nil {
		v.t.Fatal(err)
	}
	return args
}

func (v *env) ready(name string, pid int) bool {
	_, err := os.Stat(filepath.Join(v.fake, "ready", fmt.Sprintf("%s.%d", name, pid)))
	return err == nil
}

// waitReady waits until the executor reports process as running and its
// fake says it is ready; it returns the pid.
func (v *env) waitReady(e *Executor, process, fake string) int {
	v.t.Helper()
	var pid int
	waitFor(v.t, process+" running and ready", func() bool {
		st, ok := statusOf(e, process)
		pid = st.PID
		return ok && st.State == StateRunning && pid > 0 && v.ready(fake, pid)
	})
	return pid
}

func statusOf(e *Executor, name string) (ProcessStatus, bool) {
	for _, s := range e.Status() {
		if s.Name == name {
			return s, true
		}
	}
	return ProcessStatus{}, false
}

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitErr(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for Run to return")
		return nil
	}
}

// alive reports whether pid is a live process (a zombie is dead: an
// orphan's reaper may be slow).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func readPids(t *testing.T, path string) PidFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pf PidFile
	if err := json.Unmarshal(b, &pf); err != nil {
		t.Fatalf("pids.json: %v: %s", err, b)
	}
	return pf
}

// misbehave runs the resource behaviours of a running fake, switched on
// by control files:
//   - dir/hog-<name>: allocate and touch 1 MiB every 2ms, keeping it all;
//   - dir/spin-<name>: spin on every CPU (GOMAXPROCS raised to NumCPU,
//     whatever the executor set);
//   - dir/work-<name>: count units of fixed CPU work, writing the count to
//     dir/progress/<name>.<pid> every 50ms;
//   - dir/disk-<name>: write a file of that many bytes in the working
//     directory.
func misbehave(dir, name, id string) {
	has := func(f string) bool {
		_, err := os.Stat(filepath.Join(dir, f+"-"+name))
		return err == nil
	}
	if b, err := os.ReadFile(filepath.Join(dir, "disk-"+name)); err == nil {
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		_ = os.WriteFile("fill", make([]byte, n), 0o644)
	}
	if has("spin") {
		runtime.GOMAXPROCS(runtime.NumCPU())
		for range runtime.NumCPU() {
			go func() {
				for x := 0; ; x++ {
					spinSink.Add(1)
				}
			}()
		}
	}
	if has("work") {
		go func() {
			var n int64
			last := time.Now()
			for {
				h := uint64(n)
				for i := 0; i < 20000; i++ {
					h = h*6364136223846793005 + 1442695040888963407
				}
				spinSink.Add(int64(h & 1))
				n++
				if time.Since(last) > 50*time.Millisecond {
					last = time.Now()
					_ = writeTestFile(filepath.Join(dir, "progress", id), []byte(strconv.FormatInt(n, 10)))
				}
			}
		}()
	}
	// The hog waits for its control file, so a test can measure first.
	for !has("hog") {
		time.Sleep(20 * time.Millisecond)
	}
	// Kept in a struct the loop reads, so no tool thinks it unused.
	keep := &struct{ chunks [][]byte }{}
	for {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep.chunks = append(keep.chunks, b)
		time.Sleep(2 * time.Millisecond)
	}
}

var spinSink atomic.Int64
