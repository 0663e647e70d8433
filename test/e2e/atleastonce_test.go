package e2e

// At-least-once delivery across processes (DESIGN.md §6, docs/delivery.md):
// the ackcheck topology (bench/topologies/ackcheck) emits N numbered
// messages from a replayable source through a fan-out bolt (3 copies per
// message, anchored), a relay bolt and a sink that records every tuple.
// With no fault every message is acked exactly once and every copy reaches
// the sink exactly once. After a kill -9 of any process while data flows,
// every message is eventually acked and every copy of it reached the sink:
// zero lost; duplicates are allowed.
//
// The progress and the verdict come from the files the topology writes in
// its state directory (the spouts' acked logs, the sinks' records), which
// survive the killed processes; see package ackcheck.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
	"github.com/egret-stream/egret/daemons/instance/gateway"
)

func init() { packages["ackcheck"] = "./bench/topologies/ackcheck" }

// ackCopies is the fan-out of the ackcheck topology (its default).
const ackCopies = 3

// allAckedTimeout bounds the wait for every message to be acked after a
// fault: a restart, then the message timeout, then the replays.
const allAckedTimeout = 5 * time.Minute

// ackRun is one ackcheck topology running on a cluster.
type ackRun struct {
	*wordCount // the process and plan helpers of faults_test.go
	state      string
	n          int64
}

// startAckCheck submits an ackcheck topology named name over n messages
// with the given extra flags and waits until every stream manager is in
// the physical plan.
func startAckCheck(t *testing.T, c *cluster, name string, n int64, flags ...string) *ackRun {
	t.Helper()
	return startAckCheckWith(t, c, name, "ackcheck", n, nil, flags...)
}

// startAckCheckWith is startAckCheck with another binary of the ackcheck
// topology (see packages) and flags of egret submit.
func startAckCheckWith(t *testing.T, c *cluster, name, bin string, n int64, submitFlags []string, flags ...string) *ackRun {
	t.Helper()
	state := sharedDir(t, filepath.Join(c.home, "state-"+name)) // kept with EGRET_HOME when a test fails
	args := append(append([]string{"submit"}, submitFlags...), c.name, c.bin(t, bin), "--",
		"--name", name, "--messages", strconv.FormatInt(n, 10), "--state", state, "--containers", "2")
	args = append(args, flags...)
	c.mustEgret(args...)
	w := &wordCount{t: t, c: c, name: name, containers: 2, store: c.store()}
	pp, _, err := w.store.PackingPlan(context.Background(), name)
	if err != nil {
		t.Fatalf("read the packing plan: %v", err)
	}
	w.plan = pp
	for _, comp := range []string{ackcheck.Source, ackcheck.Relay} {
		if len(w.tasksOf(1, comp)) == 0 || len(w.tasksOf(2, comp)) == 0 {
			t.Fatalf("the packing plan does not spread %s over both containers: %+v", comp, pp.Containers)
		}
	}
	return &ackRun{wordCount: w, state: state, n: n}
}

// check reads the state directory.
func (r *ackRun) check() *ackcheck.Result {
	r.t.Helper()
	res, err := ackcheck.Check(r.state, r.n, ackCopies)
	if err != nil {
		r.t.Fatalf("read the ackcheck state: %v", err)
	}
	return res
}

// waitAcked waits until at least want distinct messages are acked and
// returns the result seen then.
func (r *ackRun) waitAcked(what string, want int64, timeout time.Duration) *ackcheck.Result {
	r.t.Helper()
	var res *ackcheck.Result
	await(r.t, what, timeout, func() (bool, string) {
		res = r.check()
		return res.Acked >= want, fmt.Sprintf("%d of %d messages acked, %d replays", res.Acked, r.n, res.Replays)
	})
	return res
}

// TestAtLeastOnceNoFault: without faults, every message is acked exactly
// once, every copy reaches the sink exactly once, and the spouts report no
// fail and no timeout.
func TestAtLeastOnceNoFault(t *testing.T) {
	c := newCluster(t, "local")
	const n = 20000
	r := startAckCheck(t, c, "ackcheck", n) // as fast as max.spout.pending allows
	began := time.Now()
	r.waitAcked("every message to be acked", n, allAckedTimeout)
	t.Logf("%d messages acked in %s", n, time.Since(began).Round(time.Millisecond))
	// The counters reach the topology manager every export interval.
	var sums map[string]float64
	await(t, "the spouts' metrics to report every ack", recoverTimeout, func() (bool, string) {
		s, err := c.stats(r.name)
		if err != nil {
			return false, err.Error()
		}
		sums = s[ackcheck.Source]
		return sums[gateway.MetricAcked] == n && sums[gateway.MetricPendingRoots] == 0,
			fmt.Sprintf("%s = %v, %s = %v", gateway.MetricAcked, sums[gateway.MetricAcked], gateway.MetricPendingRoots, sums[gateway.MetricPendingRoots])
	})
	for _, m := range []string{gateway.MetricFailed, gateway.MetricTimedOut, "user." + ackcheck.CounterFailed, "user." + ackcheck.CounterReplayed} {
		if v, ok := sums[m]; !ok || v != 0 {
			t.Errorf("spout metric %s = %v (reported: %v), want 0", m, v, ok)
		}
	}
	if cnt := sums[gateway.MetricCompleteLatencyCount]; cnt > 0 {
		t.Logf("mean complete latency %s", time.Duration(sums[gateway.MetricCompleteLatencyNanos]/cnt))
	}
	res := r.check()
	t.Logf("%s", res)
	if !res.ExactlyOnce() {
		t.Errorf("want every message acked once and every copy recorded once with no replay: %s", res)
	}
	r.kill()
}

// TestAtLeastOnceFaults kills -9 one kind of process while messages flow
// and checks that every message is still acked and every copy of it
// reached the sink. The cases share one local cluster and run one after
// the other.
func TestAtLeastOnceFaults(t *testing.T) {
	c := newCluster(t, "local")
	const n = 40000
	// About 5s of flow at 8000 messages/s; the 5s message timeout makes
	// the replays of trees lost with a process come soon.
	flags := []string{"--rate", "8000", "--timeout", "5s"}

	// victims returns the processes to kill, by container.
	type victims func(r *ackRun) (container int, names []string)
	one := func(component string) victims {
		return func(r *ackRun) (int, []string) {
			task := r.tasksOf(1, component)[0]
			return 1, []string{fmt.Sprintf("instance-%s-%d", component, task)}
		}
	}
	// The container of a spout task: its stream manager holds the ledger.
	const spoutContainer = 1
	cases := []struct {
		name   string
		victim victims
	}{
		{"bolt-instance", one(ackcheck.Relay)},
		{"spout-instance", one(ackcheck.Source)},
		{"stmgr", func(*ackRun) (int, []string) { return spoutContainer, []string{"stmgr"} }},
		{"metricsmgr", func(*ackRun) (int, []string) { return spoutContainer, []string{"metricsmgr"} }},
		{"tmanager", func(*ackRun) (int, []string) { return 0, []string{"tmanager"} }},
		{"container", func(r *ackRun) (int, []string) {
			var names []string
			for name := range r.procs(spoutContainer) {
				names = append(names, name)
			}
			sort.Strings(names)
			return spoutContainer, names
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := *c
			sc.t = t
			r := startAckCheck(t, &sc, "ackcheck-"+tc.name, n, flags...)
			r.waitAcked("a fifth of the messages to be acked", n/5, time.Minute)

			container, names := tc.victim(r)
			old := r.killProcs(container, names)
			killed := time.Now()
			atKill := r.check()
			t.Logf("kill -9 of %s in container %d with %d of %d messages acked", strings.Join(names, ", "), container, atKill.Acked, n)
			if atKill.Acked >= n {
				t.Fatalf("every message was acked before the kill took effect: the fault came too late to test anything")
			}
			waitDead(t, "the killed processes to exit", old)
			r.waitRestarted(container, old)
			restarted := time.Since(killed)

			res := r.waitAcked("every message to be acked after the fault", n, allAckedTimeout)
			t.Logf("restarted after %s; every message acked %s after the kill", restarted.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
			t.Logf("%s", res)
			t.Logf("replayed roots: %d; messages acked more than once: %d; duplicate sink records: %d", res.Replays, res.AckRecords-res.Acked, res.SinkDuplicates)
			if !res.Complete() {
				t.Errorf("messages lost after kill -9 of %s: %s", strings.Join(names, ", "), res)
			}
			r.kill()
		})
	}
}

// TestAtLeastOnceLocalResume runs the topology in one process twice over
// the same state directory, the first run stopped (SIGTERM) once some but
// not all messages are acked: the second run emits only what the first
// did not ack, and together they ack every message once. Each run is
// stopped on a condition, not after a fixed time, so a busy machine only
// makes the test slower.
func TestAtLeastOnceLocalResume(t *testing.T) {
	state := t.TempDir()
	const n = 6000
	// run runs the topology until done holds for the state directory, then
	// stops it as Ctrl-C would.
	run := func(what string, done func(*ackcheck.Result) bool) *ackcheck.Result {
		t.Helper()
		cmd := exec.Command(binary(t, "ackcheck"), "--messages", strconv.Itoa(n), "--state", state, "--rate", "1000", "--local")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		stopped := false
		defer func() {
			if !stopped {
				_ = cmd.Process.Kill()
				<-exited
			}
		}()
		await(t, what, allAckedTimeout, func() (bool, string) {
			select {
			case err := <-exited:
				stopped = true
				t.Fatalf("ackcheck --local exited before %s: %v\n%s", what, err, out.String())
			default:
			}
			res, err := ackcheck.Check(state, n, ackCopies)
			if err != nil {
				return false, err.Error()
			}
			return done(res), res.String()
		})
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			stopped = true
			if err != nil {
				t.Fatalf("ackcheck --local after SIGTERM: %v\n%s", err, out.String())
			}
		case <-time.After(allAckedTimeout):
			t.Fatalf("ackcheck --local did not stop within %s of SIGTERM\n%s", allAckedTimeout, out.String())
		}
		res, err := ackcheck.Check(state, n, ackCopies)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := run("the first run to ack some messages", func(r *ackcheck.Result) bool { return r.Acked >= n/20 })
	if first.Acked == 0 || first.Acked >= n {
		t.Fatalf("the first run acked %d of %d messages; want some but not all", first.Acked, n)
	}
	t.Logf("first run: %s", first)
	res := run("the second run to ack every message", func(r *ackcheck.Result) bool { return r.Acked >= n })
	t.Logf("both runs: %s", res)
	if !res.ExactlyOnce() {
		t.Errorf("want every message acked once and every copy recorded once: %s", res)
	}
	if _, err := os.Stat(filepath.Join(state, "cursor-0")); err != nil {
		t.Errorf("no cursor file: %v", err)
	}
}
