package e2e

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/topology"

	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
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

// TestRuntimeConfigRestart: a fixed setting that instances read when they
// start (topology.multilang.heartbeat.timeout; the ackcheck sink records
// the value it started with) is refused without --restart (exit 2,
// nothing changed, nothing restarted), a setting that cannot change at
// all is refused even with --restart, and with --restart it reaches every
// instance: containers 1 and 2 restart once each, drained, and every sink
// records the new value; at-least-once loses nothing and, drained,
// replays nothing.
func TestRuntimeConfigRestart(t *testing.T) {
	c := newCluster(t, "local", "egret.update.drain.timeout=90s")
	const key = topology.KeyMultilangHeartbeatTimeout
	bin := taggedAckcheckSetting(t, "v1", key)
	const n = 40000
	run := startAckCheckWith(t, c, "fixed", bin, n, nil, "--rate", "1500", "--max-pending", "500", "--timeout", "5s")
	tasks := run.sinkTasks()
	sinks := append(tasks[1], tasks[2]...)
	run.waitAcked("the first 3,000 messages", 3000, 2*time.Minute)
	run.waitTagged("every sink to record with the submitted setting", sinks, "v1@-", time.Now().Add(-time.Minute))
	before := map[int]map[string]int{1: c.pids("fixed", 1), 2: c.pids("fixed", 2)}
	definition := func() map[string]string {
		tp, err := c.store().Topology(context.Background(), "fixed")
		if err != nil {
			t.Fatal(err)
		}
		return tp.Config
	}
	submitted := definition()

	_, stderr, code := c.egret("update", c.name, "fixed", "--runtime-config", key+"=45s")
	if code != 2 || !strings.Contains(stderr, "add --restart") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("a fixed setting without --restart: exit %d, %q; want exit 2 and one line naming --restart", code, stderr)
	}
	_, stderr, code = c.egret("update", c.name, "fixed", "--runtime-config", topology.KeyDeliveryMode+"=at-most-once", "--restart")
	if code != 2 || !strings.Contains(stderr, "not even with --restart") {
		t.Fatalf("the delivery mode with --restart: exit %d, %q; want exit 2 and the reason", code, stderr)
	}
	if got := definition(); !maps.Equal(got, submitted) {
		t.Fatalf("refused updates changed the definition's settings: %v, then %v", submitted, got)
	}
	for ct, pids := range before {
		if now := c.pids("fixed", ct); !maps.Equal(now, pids) {
			t.Fatalf("a refused update restarted processes of container %d: %v, then %v", ct, pids, now)
		}
	}

	began := time.Now()
	out := c.mustEgret("update", c.name, "fixed", "--runtime-config", key+"=45s", "--restart")
	t.Logf("egret update --restart took %s:\n%s", time.Since(began).Round(time.Millisecond), out)
	for _, want := range []string{"container 1 is healthy with the new settings", "container 2 is healthy with the new settings", `drained "fixed" in`} {
		if !strings.Contains(out, want) {
			t.Errorf("egret update --restart does not say %q", want)
		}
	}
	if got := definition()[key]; got != "45s" {
		t.Errorf("the definition holds %s=%q after the restart, want 45s", key, got)
	}
	after := map[int]map[string]int{1: c.pids("fixed", 1), 2: c.pids("fixed", 2)}
	for ct, pids := range before {
		for proc, pid := range pids {
			if now, ok := after[ct][proc]; ok && now == pid {
				t.Errorf("container %d: %s (pid %d) was not restarted", ct, proc, pid)
			}
		}
	}
	run.waitTagged("every sink to record with the new setting", sinks, "v1@45s", began)

	res := run.waitAcked("every message", n, allAckedTimeout)
	if !res.ExactlyOnce() {
		t.Fatalf("after the drained restart: %s; want every message acked once, every copy recorded once, no replay", res)
	}
	for ct, pids := range after {
		if now := c.pids("fixed", ct); !maps.Equal(now, pids) {
			t.Errorf("container %d restarted more than once: %v after the update, %v at the end", ct, pids, now)
		}
	}
	for task, list := range run.tagged() {
		for _, r := range list {
			if r.Tag != "v1@45s" && r.Millis > time.Now().Add(-time.Second).UnixMilli() {
				t.Errorf("sink task %d still records %s at the end", task, r.Tag)
				break
			}
		}
	}
	c.mustEgret("kill", c.name, "fixed", "--now")
	c.waitGone(t)
}
