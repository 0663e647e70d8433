package stmgrtest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Sink records the values the bolts of a counting topology receive.
type Sink struct {
	// CountOnly makes the sink count tuples without recording values
	// (for benchmarks).
	CountOnly bool
	prepared  atomic.Int64
	// activations and deactivations count the spouts' Activate and
	// Deactivate calls.
	activations, deactivations atomic.Int64
	count                      atomic.Int64
	mu                         sync.Mutex
	seen                       map[int64]int
	byTask                     map[int]int
	delay                      atomic.Int64
}

// SetDelay makes every bolt spend d on each tuple on average from now on (a slow
// bolt, for back pressure tests); 0 makes them fast again.
func (s *Sink) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

func newSink() *Sink { return &Sink{seen: map[int64]int{}, byTask: map[int]int{}} }

func (s *Sink) add(task int, v int64) {
	s.count.Add(1)
	if s.CountOnly {
		return
	}
	s.mu.Lock()
	s.seen[v]++
	s.byTask[task]++
	s.mu.Unlock()
}

// Total is the number of tuples received by every bolt task.
func (s *Sink) Total() int { return int(s.count.Load()) }

// Activations and Deactivations count the spouts' Activate and
// Deactivate calls.
func (s *Sink) Activations() int   { return int(s.activations.Load()) }
func (s *Sink) Deactivations() int { return int(s.deactivations.Load()) }

// Prepared counts the bolt instances prepared so far.
func (s *Sink) Prepared() int { return int(s.prepared.Load()) }

// ByTask returns the number of tuples received per bolt task.
func (s *Sink) ByTask() map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]int, len(s.byTask))
	for k, v := range s.byTask {
		out[k] = v
	}
	return out
}

// Distinct is the number of distinct values received.
func (s *Sink) Distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// CheckExactlyOnce reports an error unless every value in [from, to) was
// received exactly once and nothing else was received.
func (s *Sink) CheckExactlyOnce(from, to int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for v := from; v < to; v++ {
		if n := s.seen[v]; n != 1 {
			return fmt.Errorf("value %d received %d times", v, n)
		}
	}
	if len(s.seen) != int(to-from) {
		return fmt.Errorf("received %d distinct values, want %d", len(s.seen), to-from)
	}
	return nil
}

// Limit controls how many values a counting spout emits; raise it while
// the topology runs to emit more.
type Limit struct {
	mu sync.Mutex
	n  int64
}

// Set sets the number of values every spout task emits in total.
func (l *Limit) Set(n int64) { l.mu.Lock(); l.n = n; l.mu.Unlock() }

func (l *Limit) get() int64 { l.mu.Lock(); defer l.mu.Unlock(); return l.n }

// Acks records what an at-least-once counting spout was told about its
// values.
type Acks struct {
	mu       sync.Mutex
	acked    []uint8 // by value: times acked (saturating)
	distinct int
	failed   int
}

func newAcks() *Acks { return &Acks{} }

// Distinct is the number of distinct values acked.
func (a *Acks) Distinct() int { a.mu.Lock(); defer a.mu.Unlock(); return a.distinct }

// Failed is the number of Fail calls (failures and timeouts).
func (a *Acks) Failed() int { a.mu.Lock(); defer a.mu.Unlock(); return a.failed }

// Duplicates is the number of values acked more than once.
func (a *Acks) Duplicates() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.acked {
		if c > 1 {
			n++
		}
	}
	return n
}

type countSpout struct {
	sink   *Sink
	limit  *Limit
	acks   *Acks // nil in at-most-once mode
	next   int64
	replay []int64 // failed values to emit again
	out    api.SpoutCollector
}

func (s *countSpout) Open(_ api.Context, out api.SpoutCollector) error { s.out = out; return nil }
func (s *countSpout) NextTuple() {
	if s.acks != nil {
		s.acks.mu.Lock()
		replay := s.replay
		s.replay = nil
		s.acks.mu.Unlock()
		for _, v := range replay {
			s.out.Emit(api.Values{v}, v)
		}
	}
	lim := s.limit.get()
	for i := 0; i < 64 && s.next < lim; i++ {
		var id any
		if s.acks != nil {
			id = s.next
		}
		s.out.Emit(api.Values{s.next}, id)
		s.next++
	}
}
func (s *countSpout) Ack(id any) {
	if s.acks != nil {
		v := id.(int64)
		a := s.acks
		a.mu.Lock()
		if v >= int64(len(a.acked)) {
			a.acked = append(a.acked, make([]uint8, int(v)+1-len(a.acked)+len(a.acked))...)
		}
		if a.acked[v] == 0 {
			a.distinct++
		}
		if a.acked[v] < 255 {
			a.acked[v]++
		}
		a.mu.Unlock()
	}
}
func (s *countSpout) Fail(id any) {
	if s.acks != nil {
		s.acks.mu.Lock()
		s.acks.failed++
		s.replay = append(s.replay, id.(int64))
		s.acks.mu.Unlock()
	}
}
func (s *countSpout) Activate()                                { s.sink.activations.Add(1) }
func (s *countSpout) Deactivate()                              { s.sink.deactivations.Add(1) }
func (s *countSpout) Close()                                   {}
func (s *countSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("n") }

type sinkBolt struct {
	sink *Sink
	task int
	owed time.Duration
	out  api.BoltCollector
}

func (b *sinkBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.task, b.out = ctx.TaskID(), out
	b.sink.prepared.Add(1)
	return nil
}
func (b *sinkBolt) Execute(t api.Tuple) {
	if d := b.sink.delay.Load(); d > 0 {
		// A slow component: d per tuple on average, slept in pieces of
		// at least a millisecond (shorter sleeps overshoot).
		b.owed += time.Duration(d)
		if b.owed >= time.Millisecond {
			t0 := time.Now()
			time.Sleep(b.owed)
			b.owed -= time.Since(t0)
		}
	}
	b.sink.add(b.task, t.Int64(0))
	b.out.Ack(t)
}
func (b *sinkBolt) Cleanup()                               {}
func (b *sinkBolt) DeclareOutputFields(api.OutputDeclarer) {}

// Counting is a topology "count": spout "nums" (one task) emits 0, 1, 2,
// ... up to its Limit; bolt "sink" (bolts tasks, shuffle grouping, so
// round robin over its tasks) records each value in Sink.
type Counting struct {
	Builder  *api.TopologyBuilder
	Topology *api.Topology
	Limit    *Limit
	Sink     *Sink
	// Acks is what the spout was told in at-least-once mode (nil
	// otherwise).
	Acks *Acks
}

// NewCounting builds the counting topology with the given sink
// parallelism.
func NewCounting(id string, bolts int) (*Counting, error) {
	return newCounting(id, bolts, false, nil)
}

// NewCountingAtLeastOnce builds the counting topology in at-least-once
// mode: the spout emits each value with itself as message id, replays
// failed values, and records acks in Acks; the sinks ack every tuple.
func NewCountingAtLeastOnce(id string, bolts int, config func(*api.TopologyBuilder)) (*Counting, error) {
	return newCounting(id, bolts, true, func(b *api.TopologyBuilder) {
		b.SetDeliveryMode(topology.AtLeastOnce)
		if config != nil {
			config(b)
		}
	})
}

func newCounting(id string, bolts int, acking bool, config func(*api.TopologyBuilder)) (*Counting, error) {
	c := &Counting{Limit: &Limit{}, Sink: newSink()}
	if acking {
		c.Acks = newAcks()
	}
	b := api.NewTopologyBuilder("count")
	b.SetSpout("nums", func() api.Spout { return &countSpout{sink: c.Sink, limit: c.Limit, acks: c.Acks} }, 1)
	b.SetBolt("sink", func() api.Bolt { return &sinkBolt{sink: c.Sink} }, bolts).ShuffleGrouping("nums")
	if config != nil {
		config(b)
	}
	t, err := b.Build()
	if err != nil {
		return nil, err
	}
	t.Logical.ID = id
	c.Builder, c.Topology = b, t
	return c, nil
}

// PhysicalPlan returns a plan skeleton (topology and packing; the fake
// topology manager adds versions, state and stream managers) placing each
// task in the container containerOf gives it (by task id; tasks are
// numbered with plan.TaskIDs: nums is 1, the sink tasks 2, 3, ...).
func (c *Counting) PhysicalPlan(containerOf func(task int) int) *egretpb.PhysicalPlan {
	return PlanFor(c.Topology.Logical, containerOf)
}

// PlanFor places the tasks of t as containerOf says.
func PlanFor(t *topology.Topology, containerOf func(task int) int) *egretpb.PhysicalPlan {
	byID := map[int]*plan.Container{}
	p := &plan.PackingPlan{TopologyID: t.ID}
	var order []int
	for _, in := range plan.TaskIDs(t) {
		id := containerOf(in.TaskID)
		if byID[id] == nil {
			byID[id] = &plan.Container{ID: id}
			order = append(order, id)
		}
		byID[id].Instances = append(byID[id].Instances, in)
	}
	for _, id := range order {
		p.Containers = append(p.Containers, *byID[id])
	}
	return &egretpb.PhysicalPlan{Topology: topology.ToProto(t), Packing: p.ToProto()}
}
