package e2e

// The health manager (docs/operations.md, "Health manager") on real
// processes: the slowbolt topology with a paced spout (1,500 tuples/s)
// and a bolt task that executes at most 1,000 tuples/s is in sustained
// back pressure; the health manager finds the bolt the cause, raises its
// parallelism through the update path, and back pressure goes away
// without a human.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/daemons/stmgr"
	"github.com/egret-stream/egret/launcher"
)

// hmWait bounds every wait of the health manager tests.
const hmWait = 4 * time.Minute

func TestHealthManagerScalesTheSlowBolt(t *testing.T) {
	// Small watermarks make the back pressure cycles shorter than the
	// health manager's interval, so that every interval sees some.
	c := newCluster(t, "local",
		"egret.stmgr.buffer.high.watermark.bytes=256KiB",
		"egret.stmgr.buffer.low.watermark.bytes=128KiB")
	began := time.Now()
	s := startSlowBolt(t, c, bpSlowRate, "--emit-rate", "1500",
		"--topology-config", "topology.healthmgr.enabled=true",
		"--topology-config", "topology.healthmgr.backpressure.threshold=10s",
		"--topology-config", "topology.healthmgr.interval=2s",
		"--topology-config", "topology.healthmgr.cooldown=10m",
		"--topology-config", "topology.healthmgr.max.parallelism=2")
	s.waitBackPressure(true, began)

	// The decision: the slow bolt, 1 → 2 tasks, with its reason.
	var st launcher.Stats
	await(t, "the health manager to scale the slow bolt up", hmWait, func() (bool, string) {
		out, errOut, code := c.egret("metrics", c.name, s.name, "-o", "json")
		if code != 0 {
			return false, fmt.Sprintf("egret metrics: exit %d: %s", code, strings.TrimSpace(errOut))
		}
		st = launcher.Stats{}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			return false, err.Error()
		}
		if st.HealthManager == nil || len(st.HealthManager.Decisions) == 0 {
			return false, fmt.Sprintf("no decision yet (health manager %+v)", st.HealthManager)
		}
		return true, fmt.Sprintf("%+v", st.HealthManager.Decisions)
	})
	d := st.HealthManager.Decisions[0]
	if len(st.HealthManager.Decisions) != 1 || d.Component != "slow" || d.Action != "scale-up" || d.OldParallelism != 1 || d.NewParallelism != 2 ||
		d.BackPressureSeconds < 10 || !strings.Contains(d.Reason, "slow caused back pressure") {
		t.Fatalf("decisions %+v, want one scale-up of slow from 1 to 2 after at least 10s of back pressure", st.HealthManager.Decisions)
	}
	await(t, "the packing plan to hold two slow tasks", hmWait, func() (bool, string) {
		pp, _, err := s.store.PackingPlan(context.Background(), s.name)
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, ct := range pp.Containers {
			for _, in := range ct.Instances {
				if in.Component == "slow" {
					n++
				}
			}
		}
		return n == 2, fmt.Sprintf("%d slow tasks", n)
	})

	// Back pressure goes away: no stream manager throttles its spouts for
	// 15s of fresh reports, while the bolt keeps executing.
	const quiet = 15 * time.Second
	type sample struct {
		throttled, executed float64
		at                  time.Time
	}
	var base *sample
	read := func() (sample, string) {
		var sm sample
		for ct := 1; ct <= 2; ct++ {
			v, at, ok := s.stmgrMetric(ct, stmgr.MetricBackPressureThrottled)
			if !ok {
				return sm, fmt.Sprintf("no report of container %d", ct)
			}
			if time.Since(time.Unix(0, at)) > 5*time.Second {
				return sm, fmt.Sprintf("the report of container %d is stale", ct)
			}
			sm.throttled += v
		}
		var doc statsDoc
		loc, err := s.store.TManagerLocation(context.Background(), s.name)
		if err != nil {
			return sm, err.Error()
		}
		if err := getJSON(fmt.Sprintf("http://%s:%d/stats", loc.GetHost(), loc.GetHttpPort()), &doc); err != nil {
			return sm, err.Error()
		}
		for _, e := range doc.Components["slow"].Tasks {
			sm.executed += e.Metrics["instance.executed"]
		}
		sm.at = time.Now()
		return sm, ""
	}
	await(t, "back pressure to go away", hmWait, func() (bool, string) {
		cur, bad := read()
		if bad != "" {
			base = nil
			return false, bad
		}
		if base == nil || cur.throttled != base.throttled || cur.executed < base.executed {
			base = &cur
			return false, fmt.Sprintf("throttled %s in all", time.Duration(cur.throttled))
		}
		if cur.at.Sub(base.at) < quiet {
			return false, fmt.Sprintf("no throttling for %s", cur.at.Sub(base.at).Round(time.Second))
		}
		if cur.executed <= base.executed {
			return false, "the bolt executes nothing"
		}
		return true, fmt.Sprintf("no throttling for %s; the bolt executed %.0f tuples meanwhile", cur.at.Sub(base.at).Round(time.Second), cur.executed-base.executed)
	})

	// The decision is in egret metrics' table too.
	out := c.mustEgret("metrics", c.name, s.name)
	if !strings.Contains(out, "health manager: 1 decision(s), 1 scale-up(s)") || !strings.Contains(out, "slow  scale-up  1 -> 2") {
		t.Fatalf("egret metrics does not show the decision:\n%s", out)
	}
	// What the health manager logged of its decision and the update.
	logs, _ := filepath.Glob(filepath.Join(c.home, "topologies", "*", "*", "*", "*", "logs", "healthmgr.log"))
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "decision") || strings.Contains(line, "update") || strings.Contains(line, "WARN") {
				t.Log(line)
			}
		}
	}
	c.mustEgret("kill", c.name, s.name)
	c.waitGone(t)
}

// TestHealthManagerBadSettingsRefused: a bad health manager setting fails
// the submission with exit code 2 before anything runs.
func TestHealthManagerBadSettingsRefused(t *testing.T) {
	c := newCluster(t, "local")
	for _, kv := range []string{"topology.healthmgr.backpressure.threshold=soon", "topology.healthmgr.max.parallelism=0", "topology.healthmgr.scale.factor=0.5"} {
		_, ok, why := trySlowBolt(t, c, bpSlowRate, "--topology-config", "topology.healthmgr.enabled=true", "--topology-config", kv)
		key, _, _ := strings.Cut(kv, "=")
		if ok || !strings.Contains(why, key) {
			t.Fatalf("%s: submitted (ok %v, %q); want exit 2 naming the key", kv, ok, why)
		}
		if n := len(c.processes()); n != 0 {
			t.Fatalf("%s: %d processes run after a refused submit", kv, n)
		}
	}
}
