package inproc

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
)

func TestTickLevelsUpstreamFirst(t *testing.T) {
	b := api.NewTopologyBuilder("levels")
	b.SetTickFrequency(time.Hour) // topology level: every bolt but "plain"
	b.SetSpout("s", func() api.Spout { return &countingSpout{} }, 1)
	b.SetSpout("s2", func() api.Spout { return &countingSpout{} }, 1)
	bolt := func() api.Bolt { return &tickSum{} }
	b.SetBolt("e", bolt, 1).ShuffleGrouping("a").ShuffleGrouping("c") // depth 4
	b.SetBolt("a", bolt, 2).ShuffleGrouping("s")                      // depth 1
	b.SetBolt("plain", bolt, 1).ShuffleGrouping("a").SetTickFrequency(0)
	b.SetBolt("c", bolt, 1).ShuffleGrouping("plain").SetTickFrequency(time.Minute) // depth 3
	b.SetBolt("d", bolt, 3).ShuffleGrouping("s2")                                  // depth 1
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	layout := plan.SingleContainer(topo.Logical).Layout()
	var got [][]string
	for _, l := range tickLevels(topo.Logical, layout, func(c *topology.Component) bool { return topo.Logical.TickFrequency(c.Name) > 0 }) {
		got = append(got, l.components)
		var want []int
		for _, c := range l.components {
			want = append(want, layout.Tasks[c]...)
		}
		if len(l.tasks) != len(want) {
			t.Errorf("level %v has tasks %v, want those of its components %v", l.components, l.tasks, want)
		}
	}
	if want := [][]string{{"a", "d"}, {"c"}, {"e"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("tick levels %v, want %v", got, want)
	}
}

// drainLog records the final ticks of a drainTopology.
type drainLog struct {
	mu      sync.Mutex
	events  []string
	emitted atomic.Int64 // by the spout
	done    atomic.Bool  // the spout emitted all
	afterDe atomic.Int64 // NextTuple calls after Deactivate
	deact   atomic.Bool
	acked   atomic.Int64
	failed  atomic.Int64
}

func (l *drainLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *drainLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// numSpout emits 1..n, with a msg id in at-least-once mode.
type numSpout struct {
	n, next int64
	acking  bool
	log     *drainLog
	out     api.SpoutCollector
}

func (s *numSpout) Open(_ api.Context, out api.SpoutCollector) error { s.out = out; return nil }
func (s *numSpout) NextTuple() {
	if s.log.deact.Load() {
		s.log.afterDe.Add(1)
	}
	if s.next >= s.n {
		s.log.done.Store(true)
		return
	}
	s.next++
	var id any
	if s.acking {
		id = s.next
	}
	s.out.Emit(api.Values{s.next}, id)
	s.log.emitted.Add(1)
}
func (s *numSpout) Ack(any)                                  { s.log.acked.Add(1) }
func (s *numSpout) Fail(any)                                 { s.log.failed.Add(1) }
func (s *numSpout) Activate()                                {}
func (s *numSpout) Deactivate()                              { s.log.deact.Store(true) }
func (s *numSpout) Close()                                   {}
func (s *numSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("n") }

// tickSum sums its inputs and emits the sum only on a tick (then starts
// again from 0); it holds its inputs until then and acks them unless
// noack.
type tickSum struct {
	name  string
	noack bool
	log   *drainLog
	out   api.BoltCollector
	sum   int64
	held  []api.Tuple
}

func (b *tickSum) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }
func (b *tickSum) Execute(t api.Tuple) {
	if !t.IsTick() {
		b.sum += t.Int64(0)
		b.held = append(b.held, t)
		return
	}
	b.log.add(fmt.Sprintf("%s tick %d", b.name, b.sum))
	if b.sum != 0 {
		b.out.Emit(api.Values{b.sum})
	}
	b.sum = 0
	if !b.noack {
		for _, h := range b.held {
			b.out.Ack(h)
		}
	}
	b.held = b.held[:0]
}
func (b *tickSum) Cleanup()                                 {}
func (b *tickSum) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("n") }

// slowForward forwards each tuple after a pause, so that what a final
// tick emits upstream takes a while to reach the next tick bolt.
type slowForward struct{ out api.BoltCollector }

func (b *slowForward) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }
func (b *slowForward) Execute(t api.Tuple) {
	time.Sleep(50 * time.Millisecond)
	b.out.Emit(api.Values{t.Int64(0)}, t)
	b.out.Ack(t)
}
func (b *slowForward) Cleanup()                                 {}
func (b *slowForward) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("n") }

// drainTopology: src (1..n) → up (2 tasks, tick 1h) → mid (slow, no
// tick) → down (tick 1h). Only the final ticks make anything reach down.
func drainTopology(t *testing.T, n int64, acking, noack bool, log *drainLog) *api.Topology {
	t.Helper()
	b := api.NewTopologyBuilder("drain")
	if acking {
		b.SetDeliveryMode(topology.AtLeastOnce).SetMessageTimeout(10 * time.Minute)
	}
	b.SetSpout("src", func() api.Spout { return &numSpout{n: n, acking: acking, log: log} }, 1)
	b.SetBolt("down", func() api.Bolt { return &tickSum{name: "down", log: log} }, 1).GlobalGrouping("mid").SetTickFrequency(time.Hour)
	b.SetBolt("up", func() api.Bolt { return &tickSum{name: "up", noack: noack, log: log} }, 2).ShuffleGrouping("src").SetTickFrequency(time.Hour)
	b.SetBolt("mid", func() api.Bolt { return &slowForward{} }, 2).ShuffleGrouping("up")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// checkFinalTicks checks that both up tasks ticked before down, and that
// down's tick summed everything: it came after up's output was processed.
func checkFinalTicks(t *testing.T, log *drainLog, n int64) {
	t.Helper()
	ev := log.snapshot()
	if len(ev) != 3 || ev[0][:7] != "up tick" || ev[1][:7] != "up tick" || ev[2] != fmt.Sprintf("down tick %d", n*(n+1)/2) {
		t.Errorf("final ticks %q; want the two up tasks, then down with the sum %d", ev, n*(n+1)/2)
	}
}

func TestDrainFinalTicksUpstreamFirst(t *testing.T) {
	const n = 500
	log := &drainLog{}
	r, err := New(drainTopology(t, n, false, false, log), Options{DrainTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s := runUntil(t, r, log.done.Load, nil)
	checkFinalTicks(t, log, n)
	if !log.deact.Load() || log.afterDe.Load() != 0 {
		t.Errorf("deactivated %v, NextTuple called %d times after Deactivate", log.deact.Load(), log.afterDe.Load())
	}
	d := s.Drain
	if d.Outcome != DrainCompleted || d.FinalTicks != 3 || !reflect.DeepEqual(d.Ticked, []string{"up", "down"}) || len(d.Unticked) != 0 || s.Undrained != 0 {
		t.Errorf("drain %+v, undrained %d; want completed with 3 final ticks of up, then down", d, s.Undrained)
	}
	if got := s.Component("mid").Executed; got != 2 {
		t.Errorf("mid executed %d tuples, want the 2 sums of up's final ticks", got)
	}
}

// TestDrainAtLeastOnceRootsCompleteAfterFinalTicks: up acks its inputs only
// on a tick, so the pending roots complete only after the final ticks;
// the drain waits for them after the ticks, not before.
func TestDrainAtLeastOnceRootsCompleteAfterFinalTicks(t *testing.T) {
	const n = 300
	log := &drainLog{}
	r, err := New(drainTopology(t, n, true, false, log), Options{DrainTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s := runUntil(t, r, func() bool { return log.emitted.Load() == n }, nil)
	checkFinalTicks(t, log, n)
	if s.Drain.Outcome != DrainCompleted || s.PendingRoots != 0 || log.acked.Load() != n || log.failed.Load() != 0 {
		t.Errorf("drain %+v, pending roots %d, acked %d, failed %d; want completed, all %d acked", s.Drain, s.PendingRoots, log.acked.Load(), log.failed.Load(), n)
	}
}

// TestDrainTimesOutOnPendingRoots: nobody acks, so the drain ends at its
// timeout and says it waited for the pending roots (the final ticks ran).
func TestDrainTimesOutOnPendingRoots(t *testing.T) {
	const n = 100
	log := &drainLog{}
	r, err := New(drainTopology(t, n, true, true, log), Options{DrainTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := runUntil(t, r, func() bool { return log.emitted.Load() == n }, nil)
	checkFinalTicks(t, log, n)
	d := s.Drain
	if d.Outcome != DrainTimedOut || d.Waiting != "the pending roots" || s.PendingRoots != n || d.FinalTicks != 3 || len(d.Unticked) != 0 {
		t.Errorf("drain %+v, pending roots %d; want timed out waiting for the %d pending roots after 3 final ticks", d, s.PendingRoots, n)
	}
	if d.Elapsed < 500*time.Millisecond {
		t.Errorf("the drain ended after %s, before its timeout", d.Elapsed)
	}
}

// TestDrainAbort: closing Options.Abort ends a drain that would wait for
// a minute at once.
func TestDrainAbort(t *testing.T) {
	const n = 100
	log := &drainLog{}
	abort := make(chan struct{})
	r, err := New(drainTopology(t, n, true, true, log), Options{DrainTimeout: time.Hour, Abort: abort})
	if err != nil {
		t.Fatal(err)
	}
	s := runUntil(t, r, func() bool {
		if log.emitted.Load() == n {
			close(abort)
			return true
		}
		return false
	}, nil)
	if d := s.Drain; d.Outcome != DrainAborted || d.Elapsed > time.Minute || s.PendingRoots == 0 {
		t.Errorf("drain %+v, pending roots %d; want aborted with roots pending", d, s.PendingRoots)
	}
}

// TestNoDrain: the run stops at once; no final tick is executed.
func TestNoDrain(t *testing.T) {
	const n = 100
	log := &drainLog{}
	r, err := New(drainTopology(t, n, false, false, log), Options{NoDrain: true})
	if err != nil {
		t.Fatal(err)
	}
	s := runUntil(t, r, log.done.Load, nil)
	if ev := log.snapshot(); len(ev) != 0 {
		t.Errorf("ticks without a drain: %q", ev)
	}
	if d := s.Drain; d.Outcome != DrainSkipped || d.FinalTicks != 0 || !reflect.DeepEqual(d.Unticked, []string{"up", "down"}) {
		t.Errorf("drain %+v; want skipped, up and down unticked", d)
	}
	if log.deact.Load() {
		t.Error("the spout was deactivated without a drain")
	}
}
