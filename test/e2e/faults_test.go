package e2e

// Fault injection on real processes (DESIGN.md §6, at-most-once delivery):
// after a kill -9 of any daemon, tuples in flight may be lost, but the
// topology must recover — the executor restarts the process, the stream
// managers re-register, the topology manager re-broadcasts the physical
// plan, and tuples flow again on every container. Each test runs one
// unbounded 2-container word count and kills it at the end, asserting that
// no process is left behind.
//
// Progress is read from two sources that export often enough to keep the
// tests short: the count bolts' report files (written at every 1s tick
// with the bolt's running counts) and the stream managers' metrics, which
// the metrics managers forward to the topology manager's /stats every
// egret.metrics.export.interval (500ms in the harness).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/proto/egretpb"
)

// recoverTimeout bounds every wait for a recovery step.
const recoverTimeout = 2 * time.Minute

// sentenceRate is the spout's rate (sentences per second, about 7 words
// each): well below what 2 cores process, so that queues stay short and
// progress after a fault is fresh flow, not a backlog draining.
const sentenceRate = 5000

// wordCount is an unbounded word count running on a local cluster.
type wordCount struct {
	t          *testing.T
	c          *cluster
	name       string
	containers int
	reports    string
	store      *state.Store
	plan       *plan.PackingPlan
}

// startWordCount submits an unbounded, rate-limited word count on
// containers containers and waits until every count task counts.
func startWordCount(t *testing.T, c *cluster, containers int) *wordCount {
	t.Helper()
	// The report directory lives in EGRET_HOME, which is kept when a test
	// fails and removed after its processes are killed.
	reports := filepath.Join(c.home, "reports")
	c.mustEgret("submit", c.name, c.bin(t, "wordcount"), "--",
		"--containers", strconv.Itoa(containers), "--rate", strconv.Itoa(sentenceRate), "--report-dir", reports)
	w := &wordCount{t: t, c: c, name: "wordcount", containers: containers, reports: reports, store: c.store()}
	pp, _, err := w.store.PackingPlan(context.Background(), w.name)
	if err != nil {
		t.Fatalf("read the packing plan: %v", err)
	}
	w.plan = pp
	for id := 1; id <= containers; id++ {
		if len(w.tasksOf(id, "count")) == 0 {
			t.Fatalf("container %d has no count task in the packing plan %+v: the tests need one per container", id, pp.Containers)
		}
	}
	await(t, "the physical plan to place every stream manager", recoverTimeout, func() (bool, string) {
		pp, err := w.store.PhysicalPlan(context.Background(), w.name)
		if err != nil {
			return false, err.Error()
		}
		return len(pp.GetStmgrs()) == containers, fmt.Sprintf("stmgrs %v", pp.GetStmgrs())
	})
	w.waitCountsGrow("every count task to count", w.countTasks())
	return w
}

// tasksOf returns the tasks of component in container, sorted.
func (w *wordCount) tasksOf(container int, component string) []int {
	var out []int
	for _, ct := range w.plan.Containers {
		if ct.ID != container {
			continue
		}
		for _, in := range ct.Instances {
			if in.Component == component {
				out = append(out, in.TaskID)
			}
		}
	}
	sort.Ints(out)
	return out
}

// containerOf returns the container of task.
func (w *wordCount) containerOf(task int) int {
	for _, ct := range w.plan.Containers {
		for _, in := range ct.Instances {
			if in.TaskID == task {
				return ct.ID
			}
		}
	}
	w.t.Fatalf("task %d is in no container of the packing plan", task)
	return 0
}

// countTasks returns every count task.
func (w *wordCount) countTasks() []int {
	var out []int
	for id := 1; id <= w.containers; id++ {
		out = append(out, w.tasksOf(id, "count")...)
	}
	return out
}

// countReport is one count bolt's report file: the sum of its counts and
// when it was written.
type countReport struct {
	total int64
	at    time.Time
}

// countReports reads the count bolts' report files, by task.
func (w *wordCount) countReports() map[int]countReport {
	files, _ := filepath.Glob(filepath.Join(w.reports, "count-*.json"))
	out := map[int]countReport{}
	for _, f := range files {
		task, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "count-"), ".json"))
		if err != nil {
			continue
		}
		// Stat the opened file so that the time matches the content (the
		// bolt replaces the file by renaming a new one over it).
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		fi, err1 := fh.Stat()
		var counts map[string]int64
		err2 := json.NewDecoder(fh).Decode(&counts)
		fh.Close()
		if err1 != nil || err2 != nil {
			continue
		}
		var total int64
		for _, n := range counts {
			total += n
		}
		out[task] = countReport{total: total, at: fi.ModTime()}
	}
	return out
}

// waitCountsGrow waits until each of tasks wrote a report after now and
// then a later one with a higher total: those tasks counted words after
// now. A task restarted before now starts again from zero, which this
// handles (only reports written after now are compared).
func (w *wordCount) waitCountsGrow(what string, tasks []int) {
	w.t.Helper()
	start := time.Now()
	base := map[int]int64{}
	await(w.t, what, recoverTimeout, func() (bool, string) {
		reports := w.countReports()
		ok := true
		var status []string
		for _, task := range tasks {
			r, found := reports[task]
			b, haveBase := base[task]
			switch {
			case !found || !r.at.After(start):
				ok = false
				status = append(status, fmt.Sprintf("count task %d (container %d): no report since the wait began", task, w.containerOf(task)))
			case !haveBase:
				base[task] = r.total
				ok = false
				status = append(status, fmt.Sprintf("count task %d: first total %d", task, r.total))
			case r.total <= b:
				ok = false
				status = append(status, fmt.Sprintf("count task %d (container %d): total stuck at %d", task, w.containerOf(task), r.total))
			default:
				status = append(status, fmt.Sprintf("count task %d: %d -> %d", task, b, r.total))
			}
		}
		return ok, strings.Join(status, "; ")
	})
}

// statsDoc is the part of the topology manager's GET /stats the tests read.
type statsDoc struct {
	Components map[string]struct {
		Tasks map[string]statsEntry `json:"tasks"`
	} `json:"components"`
	// Containers: container id → source label ("stmgr", ...) → latest report.
	Containers map[string]map[string]statsEntry `json:"containers"`
}

type statsEntry struct {
	UnixNanos int64              `json:"unix_nanos"`
	Metrics   map[string]float64 `json:"metrics"`
}

// stats reads the /stats of the topology manager currently registered in
// the state manager.
func (w *wordCount) stats() (*statsDoc, error) {
	var s statsDoc
	if err := w.c.tmanagerGet(w.store, w.name, "stats", &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// waitStmgrsFlow waits until every stream manager reported, after now, to
// be connected to all its peers and then reported more tuples received
// from peers: the full mesh is up and carries tuples both ways.
func (w *wordCount) waitStmgrsFlow(what string) {
	w.t.Helper()
	start := time.Now().UnixNano()
	type seen struct {
		at    int64
		tuple float64
	}
	base := map[int]seen{}
	await(w.t, what, recoverTimeout, func() (bool, string) {
		s, err := w.stats()
		if err != nil {
			return false, err.Error()
		}
		ok := true
		var status []string
		for id := 1; id <= w.containers; id++ {
			e, found := s.Containers[strconv.Itoa(id)]["stmgr"]
			peers, from := e.Metrics["stmgr.peers.connected"], e.Metrics["stmgr.tuples.from.peers"]
			b, haveBase := base[id]
			switch {
			case !found || e.UnixNanos <= start:
				ok = false
				status = append(status, fmt.Sprintf("stmgr %d: no report since the wait began", id))
			case int(peers) != w.containers-1:
				ok = false
				status = append(status, fmt.Sprintf("stmgr %d: %v of %d peers connected", id, peers, w.containers-1))
			case !haveBase:
				base[id] = seen{e.UnixNanos, from}
				ok = false
				status = append(status, fmt.Sprintf("stmgr %d: %v tuples from peers", id, from))
			case e.UnixNanos <= b.at || from <= b.tuple:
				ok = false
				status = append(status, fmt.Sprintf("stmgr %d: tuples from peers stuck at %v", id, from))
			default:
				status = append(status, fmt.Sprintf("stmgr %d: tuples from peers %v -> %v", id, b.tuple, from))
			}
		}
		return ok, strings.Join(status, "; ")
	})
}

// waitTaskMetric waits until the topology manager holds a report of task
// sent after since in which metric is positive: the task's process (whose
// counters start at zero) did that work after since.
func (w *wordCount) waitTaskMetric(component string, task int, metric string, since time.Time) {
	w.t.Helper()
	await(w.t, fmt.Sprintf("task %d (%s) to report %s after its restart", task, component, metric), recoverTimeout, func() (bool, string) {
		s, err := w.stats()
		if err != nil {
			return false, err.Error()
		}
		e, ok := s.Components[component].Tasks[strconv.Itoa(task)]
		if !ok {
			return false, "no report of the task"
		}
		if e.UnixNanos <= since.UnixNano() {
			return false, fmt.Sprintf("last report at %s is from before the restart", time.Unix(0, e.UnixNanos).Format(time.RFC3339Nano))
		}
		return e.Metrics[metric] > 0, fmt.Sprintf("%s = %v", metric, e.Metrics[metric])
	})
}

// pplan reads the physical plan from the state manager.
func (w *wordCount) pplan() *egretpb.PhysicalPlan {
	w.t.Helper()
	pp, err := w.store.PhysicalPlan(context.Background(), w.name)
	if err != nil {
		w.t.Fatalf("read the physical plan: %v", err)
	}
	return pp
}

// waitPlan waits for a physical plan newer than version in state st and
// returns it.
func (w *wordCount) waitPlan(what string, version uint64, st egretpb.TopologyState) *egretpb.PhysicalPlan {
	w.t.Helper()
	var pp *egretpb.PhysicalPlan
	await(w.t, what, recoverTimeout, func() (bool, string) {
		var err error
		if pp, err = w.store.PhysicalPlan(context.Background(), w.name); err != nil {
			return false, err.Error()
		}
		return pp.GetVersion() > version && pp.GetState() == st && len(pp.GetStmgrs()) == w.containers,
			fmt.Sprintf("version %d, state %s, %d stmgrs", pp.GetVersion(), pp.GetState(), len(pp.GetStmgrs()))
	})
	return pp
}

// procs returns the processes of a container as recorded in its pids.json,
// with their start times.
func (w *wordCount) procs(container int) map[string]proc {
	out := map[string]proc{}
	for name, pid := range w.c.pids(w.name, container) {
		if p, ok := procOf(pid); ok {
			out[name] = p
		}
	}
	return out
}

// proc identifies a process across pid reuse.
type proc struct {
	pid   int
	start uint64 // clock ticks after boot
}

func (p proc) String() string { return strconv.Itoa(p.pid) }

// procOf returns the running (not zombie) process pid.
func procOf(pid int) (proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is the first, starttime the 20th.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return proc{}, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return proc{}, false
	}
	return proc{pid: pid, start: start}, true
}

// alive reports whether the very process p still runs.
func (p proc) alive() bool {
	q, ok := procOf(p.pid)
	return ok && q.start == p.start
}

// waitDead waits until every process of ps has exited.
func waitDead(t *testing.T, what string, ps map[string]proc) {
	t.Helper()
	await(t, what, recoverTimeout, func() (bool, string) {
		var alive []string
		for name, p := range ps {
			if p.alive() {
				alive = append(alive, fmt.Sprintf("%s (pid %d)", name, p.pid))
			}
		}
		sort.Strings(alive)
		return len(alive) == 0, "still running: " + strings.Join(alive, ", ")
	})
}

// kill9 sends SIGKILL to p and waits until it is gone.
func kill9(t *testing.T, name string, p proc) {
	t.Helper()
	if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %s (pid %d): %v", name, p.pid, err)
	}
	waitDead(t, "the killed "+name+" to exit", map[string]proc{name: p})
}

// killProcs kills -9 the named processes of container and returns them
// (ESRCH counts as killed: a container's children die with its executor).
func (w *wordCount) killProcs(container int, names []string) map[string]proc {
	w.t.Helper()
	procs := w.procs(container)
	old := map[string]proc{}
	for _, name := range names {
		p, ok := procs[name]
		if !ok {
			w.t.Fatalf("container %d runs no %s: %v", container, name, procs)
		}
		old[name] = p
	}
	for _, name := range names {
		if err := syscall.Kill(old[name].pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
			w.t.Fatalf("kill -9 %s (pid %d): %v", name, old[name].pid, err)
		}
	}
	return old
}

// waitRestarted waits until the executor of container recorded a new
// process for each name in place of old, and returns them.
func (w *wordCount) waitRestarted(container int, old map[string]proc) map[string]proc {
	w.t.Helper()
	var now map[string]proc
	await(w.t, fmt.Sprintf("the executor of container %d to restart %d processes", container, len(old)), recoverTimeout, func() (bool, string) {
		now = w.procs(container)
		var pending []string
		for name, o := range old {
			if n, ok := now[name]; !ok || n == o {
				pending = append(pending, name)
			}
		}
		sort.Strings(pending)
		return len(pending) == 0, "not restarted yet: " + strings.Join(pending, ", ")
	})
	return now
}

// kill kills the topology and checks that nothing is left: no process,
// no state.
func (w *wordCount) kill() {
	w.t.Helper()
	began := time.Now()
	w.c.mustEgret("kill", w.c.name, w.name)
	w.t.Logf("egret kill took %s", time.Since(began).Round(time.Millisecond))
	w.c.waitGone(w.t)
	w.t.Logf("kill and no process left after %s", time.Since(began).Round(time.Millisecond))
	if _, err := w.store.Topology(context.Background(), w.name); !errors.Is(err, spi.ErrNotFound) {
		w.t.Errorf("topology state left after kill: %v", err)
	}
}

// await polls cond until it holds, failing the test with cond's last
// status when timeout passes.
func await(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	began := time.Now()
	deadline := began.Add(timeout)
	for {
		ok, status := cond()
		if ok {
			t.Logf("%s: done after %s (%s)", what, time.Since(began).Round(time.Millisecond), status)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// awaitRise waits until a counter read by read rises: both values
// compared are read during the wait, never one read before some moment
// (a report not yet written then, or written by a process since restarted,
// would make the rise impossible or trivial). A value below the baseline
// (a restarted process counting from zero) becomes the new baseline; -1 is
// "not readable".
func awaitRise(t *testing.T, what string, timeout time.Duration, read func() float64) {
	t.Helper()
	base := -1.0
	await(t, what, timeout, func() (bool, string) {
		v := read()
		switch {
		case v < 0:
			return false, fmt.Sprintf("unreadable (baseline %v)", base)
		case base < 0 || v < base:
			base = v
			return false, fmt.Sprintf("baseline %v", base)
		}
		return v > base, fmt.Sprintf("%v (baseline %v)", v, base)
	})
}

// TestFaultKillInstances kills -9 one instance of each component (the only
// spout, a split bolt and a count bolt): the executor restarts each with a
// new pid, and the restarted processes work — since the spout is the only
// source, counting after its restart proves it emits; the restarted count
// bolt counts again from zero; the restarted split and count tasks report
// executed tuples.
func TestFaultKillInstances(t *testing.T) {
	c := newCluster(t, "local")
	w := startWordCount(t, c, 2)

	// One task of each component, with the metric its restarted process
	// must report as positive.
	type victim struct {
		component, metric string
		task, container   int
		name              string
		old               proc
	}
	var victims []*victim
	for _, v := range []victim{{component: "sentence", metric: "instance.emitted"}, {component: "split", metric: "instance.executed"}, {component: "count", metric: "user.counted"}} {
		v.task = -1
		for id := 1; id <= w.containers && v.task < 0; id++ {
			if ts := w.tasksOf(id, v.component); len(ts) > 0 {
				v.task, v.container = ts[0], id
			}
		}
		if v.task < 0 {
			t.Fatalf("no %s task in the packing plan", v.component)
		}
		v.name = fmt.Sprintf("instance-%s-%d", v.component, v.task)
		p, ok := w.procs(v.container)[v.name]
		if !ok {
			t.Fatalf("container %d runs no %s: %v", v.container, v.name, w.procs(v.container))
		}
		v.old = p
		victims = append(victims, &v)
	}
	for _, v := range victims {
		t.Logf("kill -9 %s (container %d, pid %d)", v.name, v.container, v.old.pid)
		kill9(t, v.name, v.old)
	}
	killed := time.Now()
	for _, v := range victims {
		now := w.waitRestarted(v.container, map[string]proc{v.name: v.old})
		t.Logf("%s restarted: pid %d -> %d", v.name, v.old.pid, now[v.name].pid)
	}
	w.waitCountsGrow("every count task (the restarted one from zero) to count words of the restarted spout", w.countTasks())
	for _, v := range victims {
		w.waitTaskMetric(v.component, v.task, v.metric, killed)
	}
	w.kill()
}

// TestFaultKillStreamManager kills -9 a stream manager: the executor
// restarts it, it registers again, the topology manager broadcasts a new
// physical plan version, the peer reconnects to it and tuples flow again
// on both containers.
func TestFaultKillStreamManager(t *testing.T) {
	c := newCluster(t, "local")
	w := startWordCount(t, c, 2)
	const victim = 2
	before := w.pplan()
	old := w.procs(victim)
	st, ok := old["stmgr"]
	if !ok {
		t.Fatalf("container %d runs no stmgr: %v", victim, old)
	}
	kill9(t, "stmgr", st)
	now := w.waitRestarted(victim, map[string]proc{"stmgr": st})
	t.Logf("stmgr of container %d restarted: pid %d -> %d", victim, st.pid, now["stmgr"].pid)
	after := w.waitPlan("a new physical plan version after the stream manager re-registered", before.GetVersion(), egretpb.TopologyState_TOPOLOGY_STATE_RUNNING)
	t.Logf("physical plan version %d -> %d", before.GetVersion(), after.GetVersion())
	// The instances of the container reconnected rather than died.
	for n, p := range old {
		if strings.HasPrefix(n, "instance-") && !p.alive() {
			t.Errorf("%s (pid %d) died with its stream manager; instances must reconnect", n, p.pid)
		}
	}
	w.waitStmgrsFlow("both stream managers to reconnect and receive tuples from their peer")
	w.waitCountsGrow("the count tasks of both containers to count again", w.countTasks())
	w.kill()
}

// TestFaultKillTopologyManager kills -9 the topology manager: the executor
// of container 0 restarts it, the new one takes the location node over
// (new pid and ports), the stream managers register with it, tuples keep
// flowing and deactivate / activate work against it.
func TestFaultKillTopologyManager(t *testing.T) {
	c := newCluster(t, "local")
	w := startWordCount(t, c, 2)
	ctx := context.Background()
	oldLoc, err := w.store.TManagerLocation(ctx, w.name)
	if err != nil {
		t.Fatal(err)
	}
	before := w.pplan()
	tm, ok := w.procs(0)["tmanager"]
	if !ok {
		t.Fatalf("container 0 runs no tmanager: %v", w.procs(0))
	}
	if int(oldLoc.GetPid()) != tm.pid {
		t.Errorf("the location node names pid %d, the executor started the tmanager as pid %d", oldLoc.GetPid(), tm.pid)
	}
	kill9(t, "tmanager", tm)
	now := w.waitRestarted(0, map[string]proc{"tmanager": tm})
	newTM := now["tmanager"]
	var loc *egretpb.TManagerLocation
	await(t, "the new topology manager to take the location node over", recoverTimeout, func() (bool, string) {
		loc, err = w.store.TManagerLocation(ctx, w.name)
		if err != nil {
			return false, err.Error()
		}
		return int(loc.GetPid()) == newTM.pid, fmt.Sprintf("location names pid %d, the new tmanager is pid %d", loc.GetPid(), newTM.pid)
	})
	t.Logf("topology manager: pid %d -> %d, server port %d -> %d, http port %d -> %d",
		oldLoc.GetPid(), loc.GetPid(), oldLoc.GetServerPort(), loc.GetServerPort(), oldLoc.GetHttpPort(), loc.GetHttpPort())
	pp := w.waitPlan("the new topology manager to broadcast a newer plan", before.GetVersion(), egretpb.TopologyState_TOPOLOGY_STATE_RUNNING)
	w.waitStmgrsFlow("the stream managers to report to the new topology manager and carry tuples")
	w.waitCountsGrow("the count tasks of both containers to keep counting", w.countTasks())

	c.mustEgret("deactivate", c.name, w.name)
	pp = w.waitPlan("the new topology manager to pause the topology", pp.GetVersion(), egretpb.TopologyState_TOPOLOGY_STATE_PAUSED)
	// Once the tuples in flight are counted, the totals stop changing:
	// wait for two ticks (1s) of the count bolts without a change.
	var last map[int]int64
	var since time.Time
	await(t, "the counts to stop while the topology is deactivated", recoverTimeout, func() (bool, string) {
		cur := map[int]int64{}
		for task, r := range w.countReports() {
			cur[task] = r.total
		}
		if fmt.Sprint(cur) != fmt.Sprint(last) {
			last, since = cur, time.Now()
			return false, fmt.Sprintf("totals still changing: %v", cur)
		}
		return time.Since(since) >= 2500*time.Millisecond, fmt.Sprintf("totals %v unchanged for %s", cur, time.Since(since).Round(time.Millisecond))
	})
	c.mustEgret("activate", c.name, w.name)
	w.waitPlan("the new topology manager to resume the topology", pp.GetVersion(), egretpb.TopologyState_TOPOLOGY_STATE_RUNNING)
	w.waitCountsGrow("the count tasks of both containers to count again after activate", w.countTasks())
	if !newTM.alive() {
		t.Errorf("the new topology manager (pid %d) died", newTM.pid)
	}
	w.kill()
}

// TestFaultExecutorSIGTERM sends SIGTERM to one container's executor: it
// stops every child and exits; the scheduler service starts a new executor,
// which starts new children, and the topology flows again.
func TestFaultExecutorSIGTERM(t *testing.T) {
	c := newCluster(t, "local")
	w := startWordCount(t, c, 2)
	const victim = 1
	old := w.procs(victim)
	ex, ok := old["executor"]
	if !ok || len(old) < 3 {
		t.Fatalf("container %d: no executor or no children recorded: %v", victim, old)
	}
	wd := c.workDir(w.name)
	schedLog := filepath.Join(wd, "scheduler.log")
	execLog := filepath.Join(wd, fmt.Sprintf("container-%d", victim), "executor.log")
	schedOffset, execOffset := logSize(schedLog), logSize(execLog)
	t.Logf("SIGTERM to the executor of container %d (pid %d) with %d children", victim, ex.pid, len(old)-1)
	if err := syscall.Kill(ex.pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitDead(t, "the executor and all its children to exit after SIGTERM", old)
	if !strings.Contains(logSince(execLog, execOffset), "all processes stopped") {
		t.Errorf("the executor did not log that it stopped its processes:\n%s", logSince(execLog, execOffset))
	}
	// The scheduler service saw a clean exit (exit status 0: no error
	// logged) and restarts the executor.
	var exitLine string
	await(t, "the scheduler service to log the executor's exit", recoverTimeout, func() (bool, string) {
		for _, line := range strings.Split(logSince(schedLog, schedOffset), "\n") {
			if strings.Contains(line, "executor exited") && strings.Contains(line, fmt.Sprintf(`"container":%d,`, victim)) {
				exitLine = line
				return true, line
			}
		}
		return false, "nothing logged in " + schedLog
	})
	if strings.Contains(exitLine, `"error"`) {
		t.Errorf("the executor did not exit cleanly on SIGTERM: %s", exitLine)
	}
	now := w.waitRestarted(victim, old)
	for n := range old {
		if n != "executor" && now[n].alive() {
			t.Logf("%s: pid %d -> %d", n, old[n].pid, now[n].pid)
		}
	}
	w.waitStmgrsFlow("the restarted container's stream manager to rejoin the mesh")
	w.waitCountsGrow("the count tasks of both containers to count again", w.countTasks())
	w.kill()
}
