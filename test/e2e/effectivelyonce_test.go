package e2e

// Effectively-once across processes (DESIGN.md §6, docs/delivery.md): the
// eocount topology (test/e2e/testdata/effectivelyonce) counts the words of
// N known sentences in checkpointed state. Without a fault and after a
// kill -9 of any process while data flows, the reported counts reach
// exactly the expected ones, and at no time does any count pass its
// expected value (which would be a tuple applied twice).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/bench/topologies/eocount/eocount"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/executor"
)

func init() { packages["effectivelyonce"] = "./test/e2e/testdata/effectivelyonce" }

// eoRun is one eocount topology running on a cluster.
type eoRun struct {
	*wordCount
	state    string
	expected map[string]int64
}

func startEOCount(t *testing.T, c *cluster, name string, n int64, flags ...string) *eoRun {
	t.Helper()
	return startEOCountWith(t, c, name, n, nil, flags...)
}

// startEOCountWith is startEOCount with flags of egret submit.
func startEOCountWith(t *testing.T, c *cluster, name string, n int64, submitFlags []string, flags ...string) *eoRun {
	t.Helper()
	state := sharedDir(t, filepath.Join(c.home, "state-"+name))
	args := append(append(append([]string{"submit", c.name}, submitFlags...), c.bin(t, "effectivelyonce"), "--",
		"--name", name, "--sentences", strconv.FormatInt(n, 10), "--state", state, "--containers", "2"), flags...)
	c.mustEgret(args...)
	w := &wordCount{t: t, c: c, name: name, containers: 2, store: c.store()}
	pp, _, err := w.store.PackingPlan(context.Background(), name)
	if err != nil {
		t.Fatalf("read the packing plan: %v", err)
	}
	w.plan = pp
	var keys int64
	for i, f := range flags {
		if f == "--keys" && i+1 < len(flags) {
			keys, _ = strconv.ParseInt(flags[i+1], 10, 64)
		}
	}
	return &eoRun{wordCount: w, state: state, expected: eocount.ExpectedOf(n, keys)}
}

// check reads the reports and fails the test at once when a count passed
// its expected value.
func (r *eoRun) check() *eocount.Result {
	r.t.Helper()
	res, err := eocount.Check(r.state, r.expected)
	if err != nil {
		r.t.Fatalf("read the eocount reports: %v", err)
	}
	if len(res.Over) > 0 {
		r.t.Fatalf("counts above the expected ones (a tuple applied twice): %s", res)
	}
	return res
}

func (r *eoRun) waitCounted(what string, fraction float64, timeout time.Duration) *eocount.Result {
	r.t.Helper()
	var res *eocount.Result
	await(r.t, what, timeout, func() (bool, string) {
		res = r.check()
		if fraction >= 1 {
			return res.Exact(), res.String()
		}
		return float64(res.Counted) >= fraction*float64(res.Expected), res.String()
	})
	return res
}

// checkpointMetric reads a checkpoint figure of the topology manager.
func (r *eoRun) checkpointMetric(name string) float64 {
	var s struct {
		Containers map[string]map[string]struct {
			Metrics map[string]float64 `json:"metrics"`
		} `json:"containers"`
	}
	if err := r.c.tmanagerGet(r.store, r.name, "stats", &s); err != nil {
		return -1
	}
	v, ok := s.Containers["0"]["tmanager"].Metrics[name]
	if !ok {
		return -1
	}
	return v
}

// TestEffectivelyOnceNoFault: the counts are exact and checkpoints
// complete.
func TestEffectivelyOnceNoFault(t *testing.T) {
	c := newCluster(t, "local")
	r := startEOCount(t, c, "eocount", 20000, "--rate", "4000", "--interval", "500ms", "--set", "topology.stateful.checkpoints.keep=1")
	res := r.waitCounted("every word to be counted exactly", 1, allAckedTimeout)
	t.Logf("%s", res)
	await(t, "checkpoints to complete", recoverTimeout, func() (bool, string) {
		v := r.checkpointMetric("checkpoint.completed")
		return v >= 2, fmt.Sprintf("checkpoint.completed = %v", v)
	})
	// A rescale past the component's key groups is refused before
	// anything stops (TestWindowsRescale and TestStatefulRescaleSlurm rescale within them).
	_, stderr, code := c.egret("update", c.name, r.name, "--component-parallelism", "count:129")
	oneLineError(t, "rescaling past the max parallelism", stderr, code, 2, "max parallelism 128", "count")
	out := c.mustEgret("metrics", c.name, r.name)
	if !strings.Contains(out, "checkpoints: last complete ") || !strings.Contains(out, " completed, ") {
		t.Errorf("egret metrics does not show the checkpoints:\n%s", out)
	}
	t.Logf("egret metrics:\n%s", out)
	// Checkpoints are kept (topology.stateful.checkpoints.keep) while the
	// topology runs, and removed with it.
	dir := filepath.Join(c.home, "checkpoints", c.name, r.name)
	await(t, "storage to keep one complete checkpoint (and one in progress at most)", recoverTimeout, func() (bool, string) {
		entries, err := os.ReadDir(dir)
		var ids []string
		for _, e := range entries {
			if e.Name() != "files" { // the files the checkpoints consist of
				ids = append(ids, e.Name())
			}
		}
		return err == nil && len(ids) >= 1 && len(ids) <= 2, fmt.Sprintf("%d checkpoints in %s (%v)", len(ids), dir, err)
	})
	r.kill()
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("checkpoints or their files left in %s after kill: %d entries", dir, len(left))
	}
}

// TestEffectivelyOnceFaults kills -9 one kind of process while sentences
// flow; the counts still end exact.
func TestEffectivelyOnceFaults(t *testing.T) {
	c := newCluster(t, "local")
	const n = 30000
	flags := []string{"--rate", "3000", "--interval", "500ms"}
	one := func(component string) func(r *eoRun) (int, []string) {
		return func(r *eoRun) (int, []string) {
			task := r.tasksOf(1, component)[0]
			return 1, []string{fmt.Sprintf("instance-%s-%d", component, task)}
		}
	}
	cases := []struct {
		name   string
		victim func(r *eoRun) (int, []string)
	}{
		{"count-instance", one(eocount.Count)},
		{"spout-instance", one(eocount.Source)},
		{"stmgr", func(*eoRun) (int, []string) { return 1, []string{"stmgr"} }},
		{"ckptmgr", func(*eoRun) (int, []string) { return 2, []string{"ckptmgr"} }},
		{"tmanager", func(*eoRun) (int, []string) { return 0, []string{"tmanager"} }},
		{"container", func(r *eoRun) (int, []string) {
			var names []string
			for name := range r.procs(1) {
				names = append(names, name)
			}
			sort.Strings(names)
			return 1, names
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := *c
			sc.t = t
			r := startEOCount(t, &sc, "eo-"+tc.name, n, flags...)
			r.waitCounted("a fifth of the words to be counted", 0.2, time.Minute)
			await(t, "a checkpoint to complete", recoverTimeout, func() (bool, string) {
				v := r.checkpointMetric("checkpoint.completed")
				return v >= 1, fmt.Sprintf("checkpoint.completed = %v", v)
			})
			container, names := tc.victim(r)
			old := r.killProcs(container, names)
			killed := time.Now()
			atKill := r.check()
			t.Logf("kill -9 of %s in container %d at %s", strings.Join(names, ", "), container, atKill)
			if atKill.Exact() {
				t.Fatalf("every word was counted before the kill took effect: the fault came too late to test anything")
			}
			waitDead(t, "the killed processes to exit", old)
			r.waitRestarted(container, old)
			res := r.waitCounted("every word to be counted exactly after the fault", 1, allAckedTimeout)
			t.Logf("exact %s after the kill: %s; restores %v", time.Since(killed).Round(time.Millisecond), res, r.checkpointMetric("checkpoint.restores"))
			r.kill()
		})
	}
}

// TestEffectivelyOnceKeyedState: the count bolts keep a count per word in
// keyed state (thousands of keys, the word current from the fields
// grouping), on each state backend; a kill -9 of a count instance while
// sentences flow rolls back to the last checkpoint, the restored task
// reads its counts back from the restored backend, and the counts end
// exact.
func TestEffectivelyOnceKeyedState(t *testing.T) {
	c := newCluster(t, "local")
	const n, keys = 30000, 5000
	for _, backend := range []string{"heap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			sc := *c
			sc.t = t
			r := startEOCount(t, &sc, "eo-keyed-"+backend, n, "--rate", "3000", "--interval", "500ms",
				"--keys", strconv.Itoa(keys), "--set", topology.KeyStateBackend+"="+backend)
			r.waitCounted("a fifth of the words to be counted", 0.2, time.Minute)
			await(t, "a checkpoint to complete", recoverTimeout, func() (bool, string) {
				v := r.checkpointMetric("checkpoint.completed")
				return v >= 1, fmt.Sprintf("checkpoint.completed = %v", v)
			})
			task := r.tasksOf(1, eocount.Count)[0]
			names := []string{fmt.Sprintf("instance-%s-%d", eocount.Count, task)}
			old := r.killProcs(1, names)
			killed := time.Now()
			atKill := r.check()
			t.Logf("kill -9 of %s at %s", names[0], atKill)
			if atKill.Exact() {
				t.Fatalf("every word was counted before the kill took effect: the fault came too late to test anything")
			}
			waitDead(t, "the killed instance to exit", old)
			r.waitRestarted(1, old)
			res := r.waitCounted("every word to be counted exactly after the fault", 1, allAckedTimeout)
			if len(r.expected) != keys {
				t.Fatalf("%d distinct words, want %d", len(r.expected), keys)
			}
			t.Logf("exact %s after the kill: %s; restores %v", time.Since(killed).Round(time.Millisecond), res, r.checkpointMetric("checkpoint.restores"))
			if backend == "pebble" {
				// The restarted task's backend lives in its instance's
				// directory of the container.
				pattern := filepath.Join(sc.workDir(r.name), "container-*", "instances", "instance-"+eocount.Count+"-*", "state", "task-*")
				matches, _ := filepath.Glob(pattern)
				var dirs []string
				for _, d := range matches {
					if filepath.Ext(d) == "" { // not task-N.local, task-N.ckpt-M
						dirs = append(dirs, d)
					}
				}
				if len(dirs) == 0 {
					t.Errorf("no pebble state directory matches %s", pattern)
				}
				t.Logf("pebble state directories: %v", dirs)
			}
			r.kill()
		})
	}
}

// TestEffectivelyOnceFailingStorage: a checkpoint storage that fails every
// store (its topology directory is a file) fails every checkpoint; the
// topology keeps processing, the counts are still exact, and the failures
// are reported.
func TestEffectivelyOnceFailingStorage(t *testing.T) {
	root := t.TempDir()
	const name = "eo-failing"
	if err := os.WriteFile(filepath.Join(root, name), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, "local", "egret.checkpoint.localfs.root="+root)
	r := startEOCount(t, c, name, 10000, "--rate", "4000", "--interval", "300ms")
	res := r.waitCounted("every word to be counted exactly without a checkpoint", 1, allAckedTimeout)
	t.Logf("%s", res)
	await(t, "the failed checkpoints to be reported", recoverTimeout, func() (bool, string) {
		failed, completed := r.checkpointMetric("checkpoint.failed"), r.checkpointMetric("checkpoint.completed")
		return failed >= 2 && completed == 0, fmt.Sprintf("checkpoint.failed = %v, checkpoint.completed = %v", failed, completed)
	})
	r.kill()
}

// TestEffectivelyOnceRandomFaults kills -9, one after the other, processes
// chosen at random (the seed is logged) in one run while sentences flow,
// each kill striking after a new checkpoint completed; the counts still
// end exact.
func TestEffectivelyOnceRandomFaults(t *testing.T) {
	c := newCluster(t, "local")
	r := startEOCount(t, c, "eo-random", 40000, "--rate", "2000", "--interval", "300ms")
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	t.Logf("seed %d", seed)
	kinds := []string{"instance", "stmgr", "ckptmgr", "tmanager", "container"}
	for i := 0; i < 6; i++ {
		awaitRise(t, "a new checkpoint", recoverTimeout, func() float64 { return r.checkpointMetric("checkpoint.completed") })
		kind := kinds[rng.IntN(len(kinds))]
		container := 1 + rng.IntN(2)
		procs := r.procs(container)
		var names []string
		switch kind {
		case "instance":
			for name := range procs {
				if strings.HasPrefix(name, "instance-") {
					names = append(names, name)
				}
			}
			sort.Strings(names)
			names = names[rng.IntN(len(names)):][:1]
		case "tmanager":
			container = 0
			names = []string{"tmanager"}
		case "container":
			for name := range procs {
				names = append(names, name)
			}
		default:
			names = []string{kind}
		}
		old := r.killProcs(container, names)
		t.Logf("kill %d: %s in container %d at %s", i+1, strings.Join(names, ", "), container, r.check())
		waitDead(t, "the killed processes to exit", old)
		r.waitRestarted(container, old)
	}
	res := r.waitCounted("every word to be counted exactly after the faults", 1, allAckedTimeout)
	t.Logf("%s", res)
	r.kill()
}

// TestEffectivelyOnceContainerMode: eocount with
// topology.container.mode process-per-container, where each container's
// instances hand their frames (data, barriers, state) to the stream
// manager of their process directly. The counts end exact, also after a
// kill -9 of container 1's process while sentences flow.
func TestEffectivelyOnceContainerMode(t *testing.T) {
	c := newCluster(t, "local")
	r := startEOCount(t, c, "eo-ppc", 30000, "--rate", "3000", "--interval", "500ms", "--set", "topology.container.mode=process-per-container")
	for ct := 1; ct <= 2; ct++ {
		if _, ok := r.procs(ct)["container"]; !ok {
			t.Fatalf("container %d runs %v, want a container process", ct, procNames(r.procs(ct)))
		}
	}
	r.waitCounted("a fifth of the words to be counted", 0.2, time.Minute)
	await(t, "a checkpoint to complete", recoverTimeout, func() (bool, string) {
		v := r.checkpointMetric("checkpoint.completed")
		return v >= 1, fmt.Sprintf("checkpoint.completed = %v", v)
	})
	old := r.killProcs(1, []string{"container"})
	if atKill := r.check(); atKill.Exact() {
		t.Fatalf("every word was counted before the kill took effect: the fault came too late to test anything")
	}
	waitDead(t, "the killed container process to exit", old)
	r.waitRestarted(1, old)
	res := r.waitCounted("every word to be counted exactly after the kill", 1, allAckedTimeout)
	t.Logf("%s; restores %v", res, r.checkpointMetric("checkpoint.restores"))
	r.kill()
}

func init() { packages["eoshell"] = "./test/e2e/testdata/eoshell" }

// TestEffectivelyOnceRefusesUncheckpointable: an effectively-once submit
// holding a component that cannot be checkpointed (a shell bolt) is
// refused before anything happens, in one line naming it; marked
// stateless, the same topology runs — its split bolt a pystorm
// subprocess, synced at every barrier — and counts exactly through a
// kill -9 of the shell bolt's instance.
func TestEffectivelyOnceRefusesUncheckpointable(t *testing.T) {
	c := newCluster(t, "local")
	eo := binary(t, "eoshell")
	_, stderr, code := c.egret("submit", c.name, eo, "--", "--name", "eoshell")
	oneLineError(t, "an effectively-once topology with a shell bolt", stderr, code, 2,
		`component "split" cannot be checkpointed`, "shell bolt", "SetStateless", "effectively-once")
	if present, err := c.store().Present(context.Background(), "eoshell"); err != nil || len(present) > 0 {
		t.Errorf("the refused submit left state: %v (%v)", present, err)
	}
	if procs := c.processes(); len(procs) > 0 {
		t.Errorf("the refused submit started processes: %v", procs)
	}
	if entries, _ := os.ReadDir(filepath.Join(c.home, "topologies")); len(entries) > 0 {
		t.Errorf("the refused submit created topology directories: %d", len(entries))
	}

	const n = 6000
	state := filepath.Join(c.home, "state-eoshell")
	c.mustEgret("submit", c.name, eo, "--resources", filepath.Join(repoRoot(), "test", "e2e", "testdata", "eoshell", "resources"), "--",
		"--name", "eoshell", "--stateless-split", "--sentences", strconv.Itoa(n), "--state", state, "--containers", "2",
		"--rate", "1500", "--interval", "500ms", "--set", topology.KeyMultilangPath+"="+pythonBin(t))
	w := &wordCount{t: t, c: c, name: "eoshell", containers: 2, store: c.store()}
	pp, _, err := w.store.PackingPlan(context.Background(), "eoshell")
	if err != nil {
		t.Fatal(err)
	}
	w.plan = pp
	r := &eoRun{wordCount: w, state: state, expected: eocount.Expected(n)}
	r.waitCounted("a third of the words to be counted", 0.3, allAckedTimeout)
	for ct := 1; ct <= 2; ct++ {
		if ts := r.tasksOf(ct, eocount.Split); len(ts) > 0 {
			old := r.killProcs(ct, []string{fmt.Sprintf("instance-%s-%d", eocount.Split, ts[0])})
			waitDead(t, "the killed shell bolt instance to exit", old)
			r.waitRestarted(ct, old)
			break
		}
	}
	t.Logf("%s", r.waitCounted("every word to be counted exactly", 1, allAckedTimeout))
	r.kill()
}

// TestEffectivelyOncePebbleOutgrowsMemory: the count task keeps a keyed
// state four times larger than its memory limit on the pebble backend
// (every count padded to 6000 random bytes, ~50 000 words: 290 MiB; the
// task's ram 80 MiB: GOMEMLIMIT 64 MiB, and the executor kills it above
// 80 MiB). It is killed -9 while one of its checkpoints is being uploaded,
// then its whole container while another is; the counts end exact, the
// last checkpoint of the task holds the whole state, the task was never
// killed for its memory (the executor's verdict: cgroup and RSS watchdog)
// and its peak RSS stayed below half its state; kill leaves no
// checkpoint file, not even the temporary files of the uploads cut short.
func TestEffectivelyOncePebbleOutgrowsMemory(t *testing.T) {
	c := newCluster(t, "local", "egret.executor.monitor.interval=500ms")
	const (
		n, keys    = 30000, 60000
		valueBytes = 6000
		ram        = 80 << 20
	)
	goMemLimit := int64(ram - executor.MemoryMargin(ram))
	r := startEOCount(t, c, "eo-pebble-big", n, "--rate", "1500", "--interval", "2s", "--report-every", "1s",
		"--spouts", "1", "--bolts", "1", "--keys", strconv.Itoa(keys), "--value-bytes", strconv.Itoa(valueBytes),
		"--count-ram", strconv.Itoa(ram), "--set", topology.KeyStateBackend+"=pebble")
	state := int64(len(r.expected)) * valueBytes
	if state < 4*goMemLimit {
		t.Fatalf("the test's state (%d words × %d bytes = %d MiB) is not 4× the task's GOMEMLIMIT (%d MiB)", len(r.expected), valueBytes, state>>20, goMemLimit>>20)
	}
	task := r.tasksOf(1, eocount.Count)
	container := 1
	if len(task) == 0 {
		container, task = 2, r.tasksOf(2, eocount.Count)
	}
	name := executor.InstanceName(eocount.Count, task[0])
	if env := procEnv(t, r.procs(container)[name].pid); env["GOMEMLIMIT"] != strconv.FormatInt(goMemLimit, 10) {
		t.Fatalf("the count task runs with GOMEMLIMIT=%q, want %d", env["GOMEMLIMIT"], goMemLimit)
	}
	// A fork of the task's state (its pebble checkpoint directory, named
	// by the backend's incarnation and the checkpoint's number) lives
	// from the barrier until its upload is done: polled often, a new one
	// is caught while it is uploaded.
	seen := map[string]bool{}
	uploading := func() string {
		deadline := time.Now().Add(allAckedTimeout)
		for time.Now().Before(deadline) {
			dirs, _ := filepath.Glob(filepath.Join(c.workDir(r.name), fmt.Sprintf("container-%d", container), "instances", name, "state", "task-*.ckpt-*"))
			for _, d := range dirs {
				if !seen[d] {
					seen[d] = true
					return filepath.Base(d)
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("timed out after %s waiting for a new checkpoint of the count task to be uploaded: %s", allAckedTimeout, r.check())
		return ""
	}
	var peak int64
	counted := int64(0)
	for i, victims := range [][]string{{name}, nil} {
		await(t, "the count task to count more words", allAckedTimeout, func() (bool, string) {
			res := r.check()
			return res.Counted > counted && float64(res.Counted) >= 0.2*float64(i+1)*float64(res.Expected), res.String()
		})
		fork := uploading()
		procs := r.procs(container)
		peak = max(peak, peakRSS(procs[name].pid))
		if victims == nil {
			for p := range procs {
				victims = append(victims, p)
			}
			sort.Strings(victims)
		}
		old := r.killProcs(container, victims)
		atKill := r.check()
		counted = atKill.Counted
		t.Logf("kill -9 of %s in container %d during the upload of %s, at %s", strings.Join(victims, ", "), container, fork, atKill)
		if atKill.Exact() {
			t.Fatalf("every word was counted before the kill took effect: the fault came too late to test anything")
		}
		waitDead(t, "the killed processes to exit", old)
		r.waitRestarted(container, old)
	}
	res := r.waitCounted("every word to be counted exactly after the faults", 1, allAckedTimeout)
	t.Logf("%s; restores %v", res, r.checkpointMetric("checkpoint.restores"))
	var full float64
	await(t, "a checkpoint of the whole state", allAckedTimeout, func() (bool, string) {
		s, err := r.stats()
		if err != nil {
			return false, err.Error()
		}
		full = s.Components[eocount.Count].Tasks[strconv.Itoa(task[0])].Metrics["instance.checkpoint.full.bytes"]
		return full >= float64(state), fmt.Sprintf("last checkpoint of the count task: %.0f MiB, the state %d MiB", full/(1<<20), state>>20)
	})
	peak = max(peak, peakRSS(r.procs(container)[name].pid))
	t.Logf("state %d MiB (checkpoint %.0f MiB), GOMEMLIMIT %d MiB, ram %d MiB, peak RSS of the count task %d MiB",
		state>>20, full/(1<<20), goMemLimit>>20, ram>>20, peak>>20)
	if kills := c.metric(r.name, eocount.Count, executor.MetricOOMKills); kills != 0 {
		t.Errorf("the count task was killed %v times for exceeding its memory", kills)
	}
	if peak <= 0 || 2*peak > state {
		t.Errorf("peak RSS of the count task %d MiB, its state %d MiB: the state does not outgrow the memory", peak>>20, state>>20)
	}
	r.kill()
	dir := filepath.Join(c.home, "checkpoints", c.name, r.name)
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("checkpoint files (or temporary files of the uploads cut short) left in %s after kill: %d entries", dir, len(left))
	}
}

// peakRSS returns the peak resident set of pid (VmHWM), 0 if unknown.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
