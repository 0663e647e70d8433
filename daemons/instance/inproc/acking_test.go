package inproc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// ackStats is what the spouts and the last bolt of an acking test saw.
type ackStats struct {
	mu             sync.Mutex
	acked          map[int]int // msgID → Ack calls
	failed         map[int]int // msgID → Fail calls
	recorded       map[int]int // msgID → tuples the sink executed
	maxOutstanding int
}

func newAckStats() *ackStats {
	return &ackStats{acked: map[int]int{}, failed: map[int]int{}, recorded: map[int]int{}}
}

func (s *ackStats) snapshot() (acked, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acked), sumCounts(s.failed)
}

func sumCounts(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// replaySpout emits n numbered messages with their number as msgID; when
// replay is set it re-emits failed messages (a replayable source).
type replaySpout struct {
	api.BaseSpout
	n           int
	replay      bool
	st          *ackStats
	out         api.SpoutCollector
	next        int
	queue       []int
	outstanding int
}

func (s *replaySpout) Open(_ api.Context, out api.SpoutCollector) error {
	s.out = out
	return nil
}

func (s *replaySpout) NextTuple() {
	id := -1
	switch {
	case len(s.queue) > 0:
		id, s.queue = s.queue[0], s.queue[1:]
	case s.next < s.n:
		id = s.next
		s.next++
	default:
		return
	}
	s.outstanding++
	s.st.mu.Lock()
	s.st.maxOutstanding = max(s.st.maxOutstanding, s.outstanding)
	s.st.mu.Unlock()
	s.out.Emit(api.Values{id}, id)
}

func (s *replaySpout) Ack(msgID any) {
	s.outstanding--
	s.st.mu.Lock()
	s.st.acked[msgID.(int)]++
	s.st.mu.Unlock()
}

func (s *replaySpout) Fail(msgID any) {
	s.outstanding--
	s.st.mu.Lock()
	s.st.failed[msgID.(int)]++
	s.st.mu.Unlock()
	if s.replay {
		s.queue = append(s.queue, msgID.(int))
	}
}

func (s *replaySpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("id") }

// splitBolt emits two parts of each message anchored on it, then acks it.
type splitBolt struct {
	api.BaseBolt
	out api.BoltCollector
}

func (b *splitBolt) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }
func (b *splitBolt) Execute(t api.Tuple) {
	for part := range 2 {
		b.out.Emit(api.Values{t.Value(0), part}, t)
	}
	b.out.Ack(t)
}
func (b *splitBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("id", "part") }

// pairBolt waits for both parts of a message and emits one tuple anchored
// on both (two anchors, same root), then acks both.
type pairBolt struct {
	api.BaseBolt
	out  api.BoltCollector
	held map[int]api.Tuple
}

func (b *pairBolt) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out, b.held = out, map[int]api.Tuple{}
	return nil
}
func (b *pairBolt) Execute(t api.Tuple) {
	id := t.Value(0).(int)
	other, ok := b.held[id]
	if !ok {
		b.held[id] = t
		return
	}
	delete(b.held, id)
	b.out.Emit(api.Values{id}, other, t)
	b.out.Ack(other)
	b.out.Ack(t)
}
func (b *pairBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("id") }

// sinkBehaviour decides what the last bolt does with a tuple.
type sinkBehaviour int

const (
	sinkAck sinkBehaviour = iota
	sinkFail
	sinkAckSecondDelivery // never acks the first delivery of a message
)

// recordBolt records the message ids it executes and acks or fails them.
type recordBolt struct {
	api.BaseBolt
	st    *ackStats
	how   sinkBehaviour
	out   api.BoltCollector
	seen  map[int]bool
	noRec bool
}

func (b *recordBolt) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out, b.seen = out, map[int]bool{}
	return nil
}
func (b *recordBolt) Execute(t api.Tuple) {
	id := t.Value(0).(int)
	if !b.noRec {
		b.st.mu.Lock()
		b.st.recorded[id]++
		b.st.mu.Unlock()
	}
	switch b.how {
	case sinkAck:
		b.out.Ack(t)
	case sinkFail:
		b.out.Fail(t)
	case sinkAckSecondDelivery:
		if b.seen[id] {
			b.out.Ack(t)
		}
		b.seen[id] = true
	}
}
func (b *recordBolt) DeclareOutputFields(api.OutputDeclarer) {}

// fakeClock is an injected clock that moves only when told.
type fakeClock struct{ nanos atomic.Int64 }

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.nanos.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.nanos.Add(int64(d)) }
func newFakeClock() *fakeClock               { c := &fakeClock{}; c.nanos.Store(1e18); return c }

// newDrainingRunner builds b's topology into a Runner that drains for up
// to 10 s, or fails t.
func newDrainingRunner(t *testing.T, b *api.TopologyBuilder) *Runner {
	t.Helper()
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(topo, Options{DrainTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runUntil runs r until cond holds (checked every millisecond) or fails t
// after a deadline; it returns the run's summary after the drain.
func runUntil(t *testing.T, r *Runner, cond func() bool, during func()) *Summary {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		s   *Summary
		err error
	}
	done := make(chan result, 1)
	go func() { s, err := r.Run(ctx); done <- result{s, err} }()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("condition not reached within 20s")
		}
		if during != nil {
			during()
		}
		time.Sleep(time.Millisecond) // polling interval of the condition
	}
	cancel()
	res := <-done
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	return res.s
}

func TestAtLeastOnceAcksEveryMessageExactlyOnce(t *testing.T) {
	const n = 2000
	st := newAckStats()
	b := api.NewTopologyBuilder("acked")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetSpout("src", func() api.Spout { return &replaySpout{n: n, st: st} }, 1).SetMaxSpoutPending(300)
	// Two consumers of the spout: each root starts with two copies.
	b.SetBolt("split", func() api.Bolt { return &splitBolt{} }, 2).ShuffleGrouping("src")
	b.SetBolt("audit", func() api.Bolt { return &recordBolt{st: st, noRec: true} }, 1).ShuffleGrouping("src")
	b.SetBolt("pair", func() api.Bolt { return &pairBolt{} }, 2).FieldsGrouping("split", "id")
	// All grouping: every pair output goes to both sink tasks.
	b.SetBolt("sink", func() api.Bolt { return &recordBolt{st: st} }, 2).AllGrouping("pair")
	r := newDrainingRunner(t, b)
	s := runUntil(t, r, func() bool { a, _ := st.snapshot(); return a == n }, nil)
	st.mu.Lock()
	defer st.mu.Unlock()
	for id := range n {
		if st.acked[id] != 1 || st.recorded[id] != 2 {
			t.Fatalf("message %d: acked %d times, recorded %d times; want 1 and 2", id, st.acked[id], st.recorded[id])
		}
	}
	if len(st.failed) != 0 {
		t.Fatalf("%d messages failed", len(st.failed))
	}
	src := s.Component("src")
	if src.Acked != n || src.Failed != 0 || src.TimedOut != 0 || src.CompleteLatencyCount != n || src.CompleteLatencyNanos <= 0 {
		t.Fatalf("spout metrics: acked %d failed %d timed out %d latency count %d sum %d", src.Acked, src.Failed, src.TimedOut, src.CompleteLatencyCount, src.CompleteLatencyNanos)
	}
	if s.PendingRoots != 0 || s.Undrained != 0 {
		t.Fatalf("pending roots %d, undrained %d after the drain", s.PendingRoots, s.Undrained)
	}
}

func TestBoltFailReachesSpoutAtOnce(t *testing.T) {
	const n = 50
	st := newAckStats()
	clock := newFakeClock() // never advanced: no timeout can fire
	b := api.NewTopologyBuilder("failing")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetSpout("src", func() api.Spout { return &replaySpout{n: n, st: st} }, 1)
	b.SetBolt("split", func() api.Bolt { return &splitBolt{} }, 1).ShuffleGrouping("src")
	b.SetBolt("sink", func() api.Bolt { return &recordBolt{st: st, how: sinkFail} }, 1).ShuffleGrouping("split")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(topo, Options{DrainTimeout: 10 * time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	s := runUntil(t, r, func() bool { _, f := st.snapshot(); return f == n }, nil)
	src := s.Component("src")
	if src.Failed != n || src.Acked != 0 || src.TimedOut != 0 || s.PendingRoots != 0 {
		t.Fatalf("spout metrics: failed %d acked %d timed out %d pending %d; want %d failed only", src.Failed, src.Acked, src.TimedOut, s.PendingRoots, n)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for id := range n {
		if st.failed[id] != 1 {
			t.Fatalf("message %d failed %d times, want once (both parts fail one root)", id, st.failed[id])
		}
	}
}

func TestTimeoutFailsAndReplayCompletes(t *testing.T) {
	const n = 100
	const timeout = 30 * time.Second
	st := newAckStats()
	clock := newFakeClock()
	b := api.NewTopologyBuilder("timeouts")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetSpout("src", func() api.Spout { return &replaySpout{n: n, st: st, replay: true} }, 1).SetMessageTimeout(timeout)
	b.SetBolt("sink", func() api.Bolt { return &recordBolt{st: st, how: sinkAckSecondDelivery} }, 2).FieldsGrouping("src", "id")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(topo, Options{DrainTimeout: 10 * time.Second, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	pending := func() int64 { return r.Metrics()[r.Layout().Tasks["src"][0]].PendingRoots.Load() }
	advanced := false
	s := runUntil(t, r, func() bool { a, _ := st.snapshot(); return a == n }, func() {
		// Once every message is out and none was acked, jump past the
		// timeout: every root times out and is replayed.
		if !advanced && pending() == n {
			if a, f := st.snapshot(); a != 0 || f != 0 {
				t.Errorf("before the timeout: %d acked, %d failed; want none", a, f)
			}
			advanced = true
			clock.Advance(timeout + time.Second)
		}
	})
	src := s.Component("src")
	if src.TimedOut != n || src.Acked != n || src.Failed != 0 {
		t.Fatalf("spout metrics: timed out %d acked %d failed %d; want %d, %d, 0", src.TimedOut, src.Acked, src.Failed, n, n)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for id := range n {
		if st.acked[id] != 1 || st.failed[id] != 1 || st.recorded[id] != 2 {
			t.Fatalf("message %d: acked %d, failed %d, recorded %d; want 1, 1, 2", id, st.acked[id], st.failed[id], st.recorded[id])
		}
	}
}

func TestMaxSpoutPendingBoundsPending(t *testing.T) {
	const n, maxPending = 500, 4
	st := newAckStats()
	b := api.NewTopologyBuilder("bounded")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetSpout("src", func() api.Spout { return &replaySpout{n: n, st: st} }, 1).SetMaxSpoutPending(maxPending)
	b.SetBolt("split", func() api.Bolt { return &splitBolt{} }, 2).ShuffleGrouping("src")
	b.SetBolt("sink", func() api.Bolt { return &recordBolt{st: st} }, 1).ShuffleGrouping("split")
	r := newDrainingRunner(t, b)
	runUntil(t, r, func() bool { a, _ := st.snapshot(); return a == n }, nil)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.maxOutstanding > maxPending {
		t.Fatalf("%d messages were pending at once; max.spout.pending is %d", st.maxOutstanding, maxPending)
	}
	if st.maxOutstanding < 1 {
		t.Fatal("no message was ever pending")
	}
}

func TestMaxSpoutPendingStopsNextTupleWithoutAcks(t *testing.T) {
	const maxPending = 5
	st := newAckStats()
	b := api.NewTopologyBuilder("stuck")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetSpout("src", func() api.Spout { return &replaySpout{n: 1 << 30, st: st} }, 1).SetMaxSpoutPending(maxPending)
	// The sink never acks the first delivery: nothing completes.
	b.SetBolt("sink", func() api.Bolt { return &recordBolt{st: st, how: sinkAckSecondDelivery} }, 1).ShuffleGrouping("src")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	r, err := New(topo, Options{DrainTimeout: 50 * time.Millisecond, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	task := r.Layout().Tasks["src"][0]
	m := r.Metrics()[task]
	var seen int64
	runUntil(t, r, func() bool {
		// The spout keeps being woken (NextTuples would grow without the
		// bound); wait for many loop turns at the bound.
		if m.PendingRoots.Load() == maxPending {
			seen++
		}
		return seen >= 50
	}, nil)
	if e := m.Emitted.Load(); e != maxPending {
		t.Fatalf("spout emitted %d tuples with nothing acked; max.spout.pending is %d", e, maxPending)
	}
}

// panickySpout emits n numbered messages and panics right after every
// seventh emit: the runtime reports the panic and goes on calling
// NextTuple (several calls run back to back in one burst).
type panickySpout struct {
	replaySpout
	panics *atomic.Int64
}

func (s *panickySpout) NextTuple() {
	before := s.next
	s.replaySpout.NextTuple()
	if s.next != before && before%7 == 3 {
		s.panics.Add(1)
		panic(fmt.Sprintf("spout panics after emitting %d", before))
	}
}

// TestSpoutPanicMidBurst: a NextTuple that panics after emitting loses
// nothing and does not stop the spout: every message is acked once and
// every panic is counted as an error.
func TestSpoutPanicMidBurst(t *testing.T) {
	const n = 700
	st := newAckStats()
	var panics atomic.Int64
	b := api.NewTopologyBuilder("panicky")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetSpout("src", func() api.Spout { return &panickySpout{replaySpout: replaySpout{n: n, st: st}, panics: &panics} }, 1)
	b.SetBolt("sink", func() api.Bolt { return &recordBolt{st: st} }, 1).ShuffleGrouping("src")
	r := newDrainingRunner(t, b)
	s := runUntil(t, r, func() bool { a, _ := st.snapshot(); return a == n }, nil)
	st.mu.Lock()
	defer st.mu.Unlock()
	for id := range n {
		if st.acked[id] != 1 || st.recorded[id] != 1 {
			t.Fatalf("message %d: acked %d times, recorded %d times; want 1 and 1", id, st.acked[id], st.recorded[id])
		}
	}
	if want := int64(n / 7); panics.Load() != want {
		t.Fatalf("%d panics, want %d", panics.Load(), want)
	}
	if src := s.Component("src"); src.Errors != panics.Load() || src.Emitted != n {
		t.Fatalf("spout errors %d (want %d), emitted %d (want %d)", src.Errors, panics.Load(), src.Emitted, n)
	}
}
