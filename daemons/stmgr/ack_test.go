package stmgr_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/daemons/stmgr/stmgrtest"
)

// startAcking starts the at-least-once counting topology on two
// containers: the spout (task 1) and sink task 2 in container 1, sink
// task 3 in container 2, so the acks of task 3 cross stream managers.
func startAcking(t *testing.T, inMemory bool, config func(*api.TopologyBuilder)) *stmgrtest.Cluster {
	c := stmgrtest.NewAckingCluster(t, 2, twoContainers, config)
	c.InMemory = inMemory
	c.StartStMgr(1)
	c.StartStMgr(2)
	for task := 1; task <= 3; task++ {
		c.StartInstance(task, twoContainers(task))
	}
	c.WaitConnected(map[int]int{1: 2, 2: 1})
	return c
}

func TestAtLeastOnceAcksEveryRootAcrossStreamManagers(t *testing.T) {
	stmgrtest.ForEachTransport(t, testAtLeastOnceAcksEveryRootAcrossStreamManagers)
}

func testAtLeastOnceAcksEveryRootAcrossStreamManagers(t *testing.T, inMemory bool) {
	c := startAcking(t, inMemory, func(b *api.TopologyBuilder) { b.SetMaxSpoutPending(500) })
	const n = 20000
	c.Count.Limit.Set(n)
	stmgrtest.WaitFor(t, 60*time.Second, fmt.Sprintf("%d values acked", n), func() bool { return c.Count.Acks.Distinct() >= n })
	if err := c.Count.Sink.CheckExactlyOnce(0, n); err != nil {
		t.Fatal(err)
	}
	if f, d := c.Count.Acks.Failed(), c.Count.Acks.Duplicates(); f != 0 || d != 0 {
		t.Fatalf("healthy run: %d fails, %d values acked twice; want none", f, d)
	}
	s1, s2 := c.StMgr(1).Counters().Acking, c.StMgr(2).Counters().Acking
	if s1.Registered != n || s1.Acked != n || s1.Pending != 0 || s1.Failed != 0 {
		t.Errorf("ledger of container 1: %+v; want %d registered and acked, none pending or failed", s1, n)
	}
	if s2.UpdatesForwarded == 0 || s2.Registered != 0 {
		t.Errorf("stmgr 2 forwarded %d updates and registered %d roots; want the acks of task 3 forwarded and no ledger", s2.UpdatesForwarded, s2.Registered)
	}
	if s1.Unknown+s1.UpdatesUnroutable+s2.UpdatesUnroutable+s1.ResultsLost != 0 {
		t.Errorf("healthy run lost acking traffic: %+v / %+v", s1, s2)
	}
	if s1.ResultsOut != n {
		t.Errorf("results sent to the spout = %d, want %d", s1.ResultsOut, n)
	}
}

// TestAtLeastOnceRecoversFromAStreamManagerRestart: the stream manager
// holding the ledger is stopped and started while roots are pending;
// the spout times them out and replays them, and every value is acked.
func TestAtLeastOnceRecoversFromAStreamManagerRestart(t *testing.T) {
	stmgrtest.ForEachTransport(t, testAtLeastOnceRecoversFromAStreamManagerRestart)
}

func testAtLeastOnceRecoversFromAStreamManagerRestart(t *testing.T, inMemory bool) {
	c := startAcking(t, inMemory, func(b *api.TopologyBuilder) {
		b.SetMaxSpoutPending(200)
		b.SetMessageTimeout(2 * time.Second)
	})
	const n = 20000
	c.Count.Limit.Set(n)
	stmgrtest.WaitFor(t, 30*time.Second, "some values acked", func() bool { return c.Count.Acks.Distinct() >= n/10 })
	c.StopStMgr(1)
	c.StartStMgr(1)
	stmgrtest.WaitFor(t, 90*time.Second, fmt.Sprintf("%d values acked", n), func() bool { return c.Count.Acks.Distinct() >= n })
	t.Logf("fails (replays) after the restart: %d; values acked more than once: %d", c.Count.Acks.Failed(), c.Count.Acks.Duplicates())
	if c.Count.Sink.Distinct() != n {
		t.Fatalf("the sinks saw %d distinct values, want %d", c.Count.Sink.Distinct(), n)
	}
}
