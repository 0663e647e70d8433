package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/internal/zktest"
)

// quiet waits until a metric stops changing: two readings one export
// interval apart that are equal.
func quiet(t *testing.T, c *cluster, topology, component, metric string) float64 {
	t.Helper()
	var last float64 = -2
	var v float64
	waitFor(t, component+" "+metric+" to stop changing", 2*time.Minute, func() bool {
		v = c.metric(topology, component, metric)
		if v >= 0 && v == last {
			return true
		}
		last = v
		time.Sleep(time.Second) // two metric exports between readings
		return false
	})
	return v
}

// lifecycle runs the operator flow of the issue against a cluster: submit,
// list, deactivate (spouts stop), activate (they resume), update the
// parallelism (new instances appear, counts stay right), restart a
// container, kill (nothing left running, no state left).
func lifecycle(t *testing.T, c *cluster) {
	// A rate-limited spout (2,000 sentences/s for 15 s): it is still
	// emitting when it is deactivated.
	reports := t.TempDir()
	c.mustEgret("submit", c.name, binary(t, "wordcount"), "--",
		"--containers", "2", "--sentences", "30000", "--rate", "2000", "--report-dir", reports)
	list := c.mustEgret("list", c.name)
	if !strings.Contains(list, "wordcount") || !strings.Contains(list, "running") {
		t.Fatalf("list does not show the running topology:\n%s", list)
	}
	waitFor(t, "the spout to emit", 2*time.Minute, func() bool {
		return c.metric("wordcount", "sentence", "instance.emitted") > 0
	})

	// Deactivate: the spout stops emitting; activate: it resumes.
	c.mustEgret("deactivate", c.name, "wordcount")
	if out := c.mustEgret("list", c.name); !strings.Contains(out, "deactivated") {
		t.Errorf("list after deactivate:\n%s", out)
	}
	stopped := quiet(t, c, "wordcount", "sentence", "instance.emitted")
	if stopped >= 30000 {
		t.Fatalf("the spout had finished (%v sentences) before it was deactivated", stopped)
	}
	c.mustEgret("activate", c.name, "wordcount")
	if out := c.mustEgret("list", c.name); !strings.Contains(out, "running") {
		t.Errorf("list after activate:\n%s", out)
	}
	waitFor(t, "the spout to resume", 2*time.Minute, func() bool {
		return c.metric("wordcount", "sentence", "instance.emitted") > stopped
	})
	exactCounts(t, reports)

	// Update: count goes from 2 to 4 tasks while the topology runs; only
	// the two new count instances start, the others (and their counts)
	// carry on, the keys that move go to the new tasks, and the counts
	// summed over every task are exact again.
	kept := map[string]int{}
	for ctr := 1; ctr <= 2; ctr++ {
		for name, pid := range c.pids("wordcount", ctr) {
			if strings.HasPrefix(name, "instance-") || name == "stmgr" {
				kept[fmt.Sprintf("%d/%s", ctr, name)] = pid
			}
		}
	}
	out := c.mustEgret("update", c.name, "wordcount", "--component-parallelism", "count:4")
	for _, step := range []string{"repacking", "rescaling it while it runs", "waiting for the new physical plan"} {
		if !strings.Contains(out, step) {
			t.Errorf("update printed no %q line:\n%s", step, out)
		}
	}
	if strings.Contains(out, "deactivating") {
		t.Errorf("a scale-up deactivated the topology:\n%s", out)
	}
	waitFor(t, "4 count instances", 2*time.Minute, func() bool {
		n := 0
		for ctr := 1; ctr <= 2; ctr++ {
			for name := range c.pids("wordcount", ctr) {
				if strings.HasPrefix(name, "instance-count-") {
					n++
				}
			}
		}
		return n == 4
	})
	pp, _, err := c.store().PackingPlan(context.Background(), "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, ctr := range pp.Containers {
		for _, in := range ctr.Instances {
			if in.Component == "count" {
				count++
			}
		}
	}
	if count != 4 {
		t.Errorf("packing plan has %d count tasks, want 4", count)
	}
	for name, pid := range kept {
		ctr, proc, _ := strings.Cut(name, "/")
		n, _ := strconv.Atoi(ctr)
		if got := c.pids("wordcount", n)[proc]; got != pid {
			t.Errorf("the scale-up restarted %s: pid %d -> %d", name, pid, got)
		}
	}
	exactCounts(t, reports)

	// Restart container 1: its executor gets a new pid.
	before := c.pids("wordcount", 1)["executor"]
	if out := c.mustEgret("restart", c.name, "wordcount", "1"); !strings.Contains(out, `restarted container 1 of topology "wordcount"`) {
		t.Errorf("restart does not say which container it restarted: %q", out)
	}
	waitFor(t, "a new executor in container 1", 2*time.Minute, func() bool {
		p := c.pids("wordcount", 1)["executor"]
		return p != 0 && p != before
	})

	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
	if out := c.mustEgret("list", c.name); strings.Contains(out, "wordcount") {
		t.Errorf("list after kill still shows the topology:\n%s", out)
	}
	if names, err := c.store().Topologies(context.Background()); err != nil || len(names) > 0 {
		t.Errorf("state after kill: %v %v", names, err)
	}
}

func TestLifecycleLocal(t *testing.T) {
	lifecycle(t, newCluster(t, "local"))
}

func TestLifecycleLocalZooKeeper(t *testing.T) {
	addr := zktest.Start(t)
	c := newCluster(t, "localzk", "egret.statemgr.connection.string="+addr, "egret.statemgr.session.timeout=5s")
	c.zk = addr
	lifecycle(t, c)
}
