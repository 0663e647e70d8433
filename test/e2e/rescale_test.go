package e2e

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
)

// TestRescaleLive scales a bolt up and down again while acking flows.
// Each update starts only the new instances and stops only the removed
// ones: the stream managers and every other instance keep running (the
// very same processes, so their in-memory state survives), and nothing is
// lost or replayed: every message is acked once and every copy recorded
// once. The scale-up is applied while the topology runs (no drain); the
// scale-down drains first. It logs the pause in acks each update caused.
func TestRescaleLive(t *testing.T) {
	c := newCluster(t, "local", "egret.update.drain.timeout=90s")
	const n = 40000
	run := startAckCheck(t, c, "live", n, "--rate", "3000", "--max-pending", "500")
	run.waitAcked("a quarter of the messages", n/4, 2*time.Minute)
	relays := len(run.tasksOf(1, ackcheck.Relay)) + len(run.tasksOf(2, ackcheck.Relay))

	before := run.allProcs()
	var out string
	pause := run.ackPause(func() {
		out = c.mustEgret("update", c.name, "live", "--component-parallelism", ackcheck.Relay+":"+strconv.Itoa(2*relays))
	})
	if !strings.Contains(out, "rescaling it while it runs") || strings.Contains(out, "deactivating") {
		t.Errorf("the scale-up paused the topology:\n%s", out)
	}
	after := run.allProcs()
	run.requireKept(before, after, nil)
	added := newNames(before, after)
	if len(added) != relays || !allPrefixed(added, "instance-"+ackcheck.Relay+"-") {
		t.Fatalf("scaling %s from %d to %d started %v, want %d new %s instances and nothing else", ackcheck.Relay, relays, 2*relays, added, relays, ackcheck.Relay)
	}
	t.Logf("scale-up %d -> %d %s tasks: acks paused %s", relays, 2*relays, ackcheck.Relay, pause)
	run.waitAcked("half of the messages", n/2, 2*time.Minute)

	before = run.allProcs()
	pause = run.ackPause(func() {
		out = c.mustEgret("update", c.name, "live", "--component-parallelism", ackcheck.Relay+":"+strconv.Itoa(relays))
	})
	if !strings.Contains(out, `drained "live" in`) {
		t.Errorf("the scale-down did not drain:\n%s", out)
	}
	after = run.allProcs()
	removed := newNames(after, before)
	if len(removed) != relays || !allPrefixed(removed, "instance-"+ackcheck.Relay+"-") {
		t.Fatalf("scaling %s back to %d stopped %v, want %d %s instances and nothing else", ackcheck.Relay, relays, removed, relays, ackcheck.Relay)
	}
	run.requireKept(before, after, removed)
	t.Logf("scale-down %d -> %d %s tasks: acks paused %s", 2*relays, relays, ackcheck.Relay, pause)

	res := run.waitAcked("every message", n, allAckedTimeout)
	if !res.ExactlyOnce() {
		t.Fatalf("after a scale-up and a scale-down: %s; want every message acked once, every copy recorded once, no replay", res)
	}
	c.mustEgret("kill", c.name, "live", "--now")
	c.waitGone(t)
}

// allProcs returns the processes of every container, keyed by
// "container/name".
func (r *ackRun) allProcs() map[string]proc {
	out := map[string]proc{}
	for ct := 1; ct <= r.containers; ct++ {
		for name, p := range r.procs(ct) {
			out[strconv.Itoa(ct)+"/"+name] = p
		}
	}
	return out
}

// requireKept fails unless every process of before, except the removed
// ones, is the very same process in after.
func (r *ackRun) requireKept(before, after map[string]proc, removed []string) {
	r.t.Helper()
	var restarted []string
	for name, p := range before {
		if slices.Contains(removed, name) {
			if p.alive() {
				r.t.Errorf("the removed %s (pid %d) still runs", name, p.pid)
			}
			continue
		}
		if q, ok := after[name]; !ok || q != p || !p.alive() {
			restarted = append(restarted, name)
		}
	}
	sort.Strings(restarted)
	if len(restarted) > 0 {
		r.t.Fatalf("the update restarted or stopped %v; only the added and removed instances may change", restarted)
	}
}

// ackPause runs update while it samples the acked count and returns the
// longest time in which no new message was acked, from just before the
// update until acks resumed after it.
func (r *ackRun) ackPause(update func()) time.Duration {
	r.t.Helper()
	var (
		mu      sync.Mutex
		last    = time.Now()
		longest time.Duration
		count   = r.check().Acked
		done    = make(chan struct{})
		resumed = make(chan struct{})
	)
	updated := false
	go func() {
		defer close(resumed)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				res, err := ackcheck.Check(r.state, r.n, ackCopies)
				if err != nil || res.Acked == count {
					continue
				}
				mu.Lock()
				count = res.Acked
				longest = max(longest, now.Sub(last))
				last = now
				finished := updated || res.Acked >= r.n
				mu.Unlock()
				if finished {
					return
				}
			}
		}
	}()
	update()
	mu.Lock()
	updated = true
	mu.Unlock()
	select {
	case <-resumed:
	case <-time.After(2 * time.Minute):
		close(done)
		<-resumed
		r.t.Fatalf("no message was acked within 2m of the update")
	}
	return longest
}

// newNames lists the names in b and not in a, sorted.
func newNames(a, b map[string]proc) []string {
	var out []string
	for name := range b {
		if _, ok := a[name]; !ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func allPrefixed(names []string, prefix string) bool {
	for _, n := range names {
		if _, name, _ := strings.Cut(n, "/"); !strings.HasPrefix(name, prefix) {
			return false
		}
	}
	return true
}
