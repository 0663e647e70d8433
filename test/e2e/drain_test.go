package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
)

// TestKillDrainsInFlightTuples: egret kill (egret.kill.drain.timeout)
// deactivates the spouts and waits until no tuple is in flight before it
// stops the containers: every id a spout emitted is acked by then, while
// messages flow at full speed with a thousand pending per spout task.
func TestKillDrainsInFlightTuples(t *testing.T) {
	c := newCluster(t, "local", "egret.kill.drain.timeout=90s")
	run := startAckCheck(t, c, "drained", 0, "--rate", "4000", "--max-pending", "1000")
	waitFor(t, "the first 2,000 acks", 2*time.Minute, func() bool {
		n, err := ackcheck.CountAcked(run.state)
		return err == nil && n >= 2000
	})

	out := c.mustEgret("kill", c.name, "drained")
	if !strings.Contains(out, `draining "drained"`) || !strings.Contains(out, `drained "drained" in`) {
		t.Fatalf("kill did not drain (egret.kill.drain.timeout=90s):\n%s", out)
	}
	c.waitGone(t)

	emitted, unacked := run.unacked()
	if emitted < 2000 {
		t.Fatalf("only %d ids emitted", emitted)
	}
	if len(unacked) > 0 {
		t.Fatalf("%d ids emitted, but some were never acked when the drained kill stopped the topology: %v", emitted, unacked)
	}
	t.Logf("%d ids emitted, every one acked before the stop", emitted)
}

// unacked counts the ids the spouts emitted (their cursors) and returns
// the first of them not acked.
func (r *ackRun) unacked() (emitted int, unacked []int64) {
	r.t.Helper()
	acked, err := ackcheck.AckedIDs(r.state)
	if err != nil {
		r.t.Fatal(err)
	}
	const spouts = 2 // ackcheck's default parallelism
	unacked = []int64{}
	for i := range int64(spouts) {
		cursor, err := ackcheck.ReadCursor(filepath.Join(r.state, ackcheck.Cursor(int(i))))
		if err != nil {
			r.t.Fatal(err)
		}
		for id := i; id <= cursor; id += spouts {
			emitted++
			if !acked[id] && len(unacked) < 20 {
				unacked = append(unacked, id)
			}
		}
	}
	return emitted, unacked
}

// TestDeactivateDrains: egret deactivate returns once nothing is in
// flight (egret.deactivate.drain.timeout): every id the spouts emitted is
// acked by then; activate resumes the flow.
func TestDeactivateDrains(t *testing.T) {
	c := newCluster(t, "local", "egret.deactivate.drain.timeout=90s")
	run := startAckCheck(t, c, "paused", 0, "--rate", "4000", "--max-pending", "1000")
	waitFor(t, "the first 2,000 acks", 2*time.Minute, func() bool {
		n, err := ackcheck.CountAcked(run.state)
		return err == nil && n >= 2000
	})
	out := c.mustEgret("deactivate", c.name, "paused")
	if !strings.Contains(out, `drained "paused" in`) || !strings.Contains(out, `deactivated topology "paused"`) {
		t.Fatalf("deactivate did not drain (egret.deactivate.drain.timeout=90s):\n%s", out)
	}
	emitted, unacked := run.unacked()
	if len(unacked) > 0 {
		t.Fatalf("%d ids emitted, but some were not acked when the drained deactivate returned: %v", emitted, unacked)
	}
	c.mustEgret("activate", c.name, "paused")
	waitFor(t, "acks after the activation", 2*time.Minute, func() bool {
		n, err := ackcheck.CountAcked(run.state)
		return err == nil && n > int64(emitted)
	})
	if out := c.mustEgret("deactivate", c.name, "paused", "--now"); strings.Contains(out, "drain") {
		t.Errorf("deactivate --now drained:\n%s", out)
	}
	c.mustEgret("kill", c.name, "paused", "--now")
	c.waitGone(t)
}

// TestKillNowAndNoDrain: --now, and a zero egret.kill.drain.timeout, stop
// at once; a bad --drain-timeout is refused before anything happens; a
// kill of a misspelled name or a second kill says that there was nothing
// to stop (exit 1; 0 with --ignore-not-found).
func TestKillNowAndNoDrain(t *testing.T) {
	c := newCluster(t, "local")
	c.mustEgret("submit", c.name, binary(t, "wordcount"), "--", "--containers", "1")
	waitFor(t, "the word count to run", 2*time.Minute, func() bool {
		return strings.Contains(c.mustEgret("list", c.name), "running")
	})
	if _, stderr, code := c.egret("kill", c.name, "wordcount", "--now", "--drain-timeout", "5s"); code != 2 || !strings.Contains(stderr, "exclude each other") {
		t.Fatalf("--now with --drain-timeout: exit %d, %q", code, stderr)
	}
	if _, stderr, code := c.egret("kill", c.name, "wordcount", "--drain-timeout", "-1s"); code != 2 || !strings.Contains(stderr, "negative") {
		t.Fatalf("a negative --drain-timeout: exit %d, %q", code, stderr)
	}
	// A misspelled name: no such topology, the nearest named, exit 1,
	// the real one untouched.
	if out, stderr, code := c.egret("kill", c.name, "wordcuont"); code != 1 || !strings.Contains(stderr, `no topology "wordcuont"`) ||
		!strings.Contains(stderr, `did you mean "wordcount"?`) || strings.Contains(out, "killed") {
		t.Fatalf("kill of a misspelled name: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if !strings.Contains(c.mustEgret("list", c.name), "running") {
		t.Fatal("a refused kill stopped the topology")
	}
	out := c.mustEgret("--config-property", "egret.kill.drain.timeout=0s", "kill", c.name, "wordcount")
	if strings.Contains(out, "draining") {
		t.Fatalf("egret.kill.drain.timeout=0s drained:\n%s", out)
	}
	c.waitGone(t)

	c.mustEgret("submit", c.name, binary(t, "wordcount"), "--", "--containers", "1")
	out = c.mustEgret("kill", c.name, "wordcount", "--now")
	if strings.Contains(out, "draining") {
		t.Fatalf("--now drained:\n%s", out)
	}
	c.waitGone(t)
	// A second kill: nothing left to stop (exit 1, or 0 with
	// --ignore-not-found), and no claim that it stopped anything.
	if out, stderr, code := c.egret("kill", c.name, "wordcount"); code != 1 || !strings.Contains(stderr, "nothing left to stop") || strings.Contains(out, "killed") {
		t.Fatalf("a second kill: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if out := c.mustEgret("kill", c.name, "wordcount", "--ignore-not-found"); !strings.Contains(out, "nothing left to stop") || strings.Contains(out, "killed") {
		t.Fatalf("a second kill with --ignore-not-found: %q", out)
	}
}

// TestRescaleDrainsFirst: a rescale that stops instances (a scale-down)
// drains (egret.update.drain.timeout) between the deactivation and the
// stop, so a rescale while messages flow loses nothing and replays
// nothing: every message is acked once and every copy reaches the sink
// once.
func TestRescaleDrainsFirst(t *testing.T) {
	c := newCluster(t, "local", "egret.update.drain.timeout=90s")
	const n = 30000
	run := startAckCheck(t, c, "rescaled", n, "--rate", "3000", "--max-pending", "500")
	run.waitAcked("a third of the messages", n/3, 2*time.Minute)
	out := c.mustEgret("update", c.name, "rescaled", "--component-parallelism", ackcheck.Relay+":1")
	if !strings.Contains(out, `drained "rescaled" in`) {
		t.Fatalf("update did not drain:\n%s", out)
	}
	res := run.waitAcked("every message", n, allAckedTimeout)
	if !res.ExactlyOnce() {
		t.Fatalf("after a drained rescale: %s; want every message acked once, every copy recorded once, no replay", res)
	}
	c.mustEgret("kill", c.name, "rescaled", "--now")
	c.waitGone(t)
}
