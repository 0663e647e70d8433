package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/bench/topologies/eocount/eocount"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/test/e2e/testdata/eowindows/eowindows"
)

// TestStatefulRescaleSlurm rescales the keyed count bolt of an
// effectively-once eocount (keyed state on the pebble backend, its
// incremental checkpoints) 2 → 5 → 3 while sentences flow, on a real
// Slurm cluster, where every update replaces the whole job (the topology
// manager included, which reads the tasks of the last complete checkpoint
// back from the state manager). Each update restarts the instances, which
// roll back to the last complete checkpoint: every task of the new plan
// restores its key groups from the old tasks that held them and its share
// of their operator state. The counts the current tasks report never pass
// the expected ones (no key restored twice) and end exactly equal to them
// (no key lost). On local, TestWindowsRescale covers the same path.
func TestStatefulRescaleSlurm(t *testing.T) {
	c := startSlurmBackend(t)
	const n, keys = 30000, 3000
	r := startEOCount(t, c, "eo-rescale", n, "--rate", "1500", "--interval", "500ms",
		"--keys", strconv.Itoa(keys), "--set", topology.KeyStateBackend+"=pebble")
	r.waitCounted("a tenth of the words to be counted", 0.1, 2*time.Minute)
	await(t, "a checkpoint to complete", recoverTimeout, func() (bool, string) {
		v := r.checkpointMetric("checkpoint.completed")
		return v >= 1, fmt.Sprintf("checkpoint.completed = %v", v)
	})
	for _, p := range []int{5, 3} {
		before := r.checkCurrent(0)
		if before.Exact() {
			t.Fatalf("every word was counted before the rescale to %d: no data flows through it (%s)", p, before)
		}
		began := time.Now()
		out := c.mustEgret("update", c.name, r.name, "--component-parallelism", eocount.Count+":"+strconv.Itoa(p))
		if !strings.Contains(out, "restores its key groups") {
			t.Errorf("egret update does not say how the state follows the rescale:\n%s", out)
		}
		t.Logf("rescale of %s to %d tasks took %s at %s:\n%s", eocount.Count, p, time.Since(began).Round(time.Millisecond), before, out)
		await(t, fmt.Sprintf("the %d %s tasks to count past where the rescale found them", p, eocount.Count), recoverTimeout, func() (bool, string) {
			res := r.checkCurrent(p)
			return res.Counted > before.Counted, res.String()
		})
	}
	await(t, "every word to be counted exactly by the 3 tasks", allAckedTimeout, func() (bool, string) {
		res := r.checkCurrent(3)
		return res.Exact(), res.String()
	})
	if keys := len(r.expected); keys != 3000 {
		t.Fatalf("%d distinct words, want 3000", keys)
	}
	r.kill()
}

// checkCurrent reads the reports of the count tasks of the current plan
// written with its parallelism (which must be want, unless 0), failing
// the test at once when a count passed its expected value.
func (r *eoRun) checkCurrent(want int) *eocount.Result {
	r.t.Helper()
	pp, _, err := r.store.PackingPlan(context.Background(), r.name)
	if err != nil {
		r.t.Fatalf("read the packing plan: %v", err)
	}
	tasks := pp.Layout().Tasks[eocount.Count]
	if want > 0 && len(tasks) != want {
		r.t.Fatalf("the packing plan has %d %s tasks, want %d", len(tasks), eocount.Count, want)
	}
	res, err := eocount.CheckReports(r.state, r.expected, func(rep eocount.Report) bool {
		return rep.Tasks == len(tasks) && slices.Contains(tasks, rep.Task)
	})
	if err != nil {
		r.t.Fatalf("read the eocount reports: %v", err)
	}
	if len(res.Over) > 0 {
		r.t.Fatalf("counts above the expected ones (a key restored or a tuple applied twice): %s", res)
	}
	return res
}

// TestWindowsRescale: eowindows from Kafka to Kafka under
// effectively-once, on local: its three window bolts are rescaled
// 2 → 5 → 3 while events flow; a read_committed consumer reads every line
// of the brute-force model exactly once.
func TestWindowsRescale(t *testing.T) {
	w := startEOWindows(t, 20000)
	w.rescaleWindows(5)
	w.rescaleWindows(3)
	w.finish()
}

// rescaleWindows rescales the three window bolts of eowindows (their
// open windows, accumulators and event-time timers are keyed state, their
// watermarks a union operator state; the Kafka spout and the
// two-phase-commit sink keep their parallelism) to p tasks while events
// flow, and makes the run follow the new plan.
func (w *eoWindows) rescaleWindows(p int) {
	t, r := w.run.t, w.run
	awaitRise(t, fmt.Sprintf("a checkpoint to complete before the rescale to %d", p), recoverTimeout,
		func() float64 { return r.checkpointMetric("checkpoint.completed") })
	if done, _, _ := w.log.check(w.want); done {
		t.Fatalf("every line was read before the rescale to %d: no events flow through it", p)
	}
	at := w.check()
	var args []string
	for _, comp := range []string{eowindows.Tumbling, eowindows.Sliding, eowindows.Session} {
		args = append(args, "--component-parallelism", comp+":"+strconv.Itoa(p))
	}
	began := time.Now()
	out := r.c.mustEgret(append([]string{"update", r.c.name, r.name}, args...)...)
	if !strings.Contains(out, "restores its key groups") {
		t.Errorf("egret update does not say how the state follows the rescale:\n%s", out)
	}
	t.Logf("rescale of the window bolts to %d tasks took %s at %s", p, time.Since(began).Round(time.Millisecond), at)
	pp, _, err := r.store.PackingPlan(context.Background(), r.name)
	if err != nil {
		t.Fatal(err)
	}
	r.plan = pp
}
