package e2e

import (
	"maps"
	"testing"
	"time"

	"github.com/egret-stream/egret/test/e2e/testdata/ackcheck/ackcheck"
)

// TestRuntimeConfigLive: egret update --runtime-config changes a running
// spout's max pending without a restart: with 5 pending roots per spout
// task the spouts never hold more than 10, and after the change to 500
// they hold more, with the same processes.
func TestRuntimeConfigLive(t *testing.T) {
	c := newCluster(t, "local")
	startAckCheck(t, c, "live", 0, "--max-pending", "5")
	pending := func() float64 { return c.metric("live", ackcheck.Source, "instance.pending.roots") }
	waitFor(t, "the spouts to report pending roots", 2*time.Minute, func() bool {
		return c.metric("live", ackcheck.Source, "instance.acked") > 1000
	})
	for range 10 {
		if p := pending(); p > 10 {
			t.Fatalf("%v roots pending with max pending 5 per spout task (2 tasks)", p)
		}
		time.Sleep(100 * time.Millisecond)
	}
	before := map[int]map[string]int{1: c.pids("live", 1), 2: c.pids("live", 2)}

	c.mustEgret("update", c.name, "live", "--runtime-config", "topology.max.spout.pending=500")
	waitFor(t, "more than 10 roots pending after the change", time.Minute, func() bool { return pending() > 10 })
	for ct, pids := range before {
		if now := c.pids("live", ct); !maps.Equal(now, pids) {
			t.Fatalf("container %d's processes changed: %v, then %v (the change must not restart anything)", ct, pids, now)
		}
	}

	// A setting fixed at submission is refused, and changes nothing.
	if _, stderr, code := c.egret("update", c.name, "live", "--runtime-config", "topology.cpu=2"); code != 2 || stderr == "" {
		t.Fatalf("a fixed setting: exit %d, %q", code, stderr)
	}
	c.mustEgret("kill", c.name, "live", "--now")
	c.waitGone(t)
}
