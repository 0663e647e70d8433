package stmgr_test

import (
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/daemons/stmgr/stmgrtest"
)

// BenchmarkTwoHopAcked is BenchmarkTwoHop in at-least-once mode (max
// spout pending 10,000): every tuple is registered, acked across both
// stream managers and its result delivered to the spout. Compare its
// cpu-ns/tuple with BenchmarkTwoHop's.
func BenchmarkTwoHopAcked(b *testing.B) {
	c := stmgrtest.NewAckingCluster(b, 1, func(task int) int {
		if task == 1 {
			return 1
		}
		return 2
	}, func(tb *api.TopologyBuilder) { tb.SetMaxSpoutPending(10000) })
	c.Count.Sink.CountOnly = true
	c.StartStMgr(1)
	c.StartStMgr(2)
	c.StartInstance(1, 1)
	c.StartInstance(2, 2)
	c.WaitConnected(map[int]int{1: 1, 2: 1})
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime(b)
	c.Count.Limit.Set(int64(b.N))
	stmgrtest.WaitFor(b, 5*time.Minute, "every tuple acked", func() bool { return c.Count.Acks.Distinct() >= b.N })
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tuples/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/tuple")
}
