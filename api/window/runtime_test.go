package window_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/instance/inproc"
)

// event is one element of eventSpout.
type event struct {
	key string
	ts  int64
	v   int64
}

const (
	runtimeEvents = 3000
	runtimeBound  = 30 // ms out of order, within the generator's bound
	sentinelKey   = "zz-end"
)

// events returns the elements spout task index emits: out of order by
// up to runtimeBound ms, over three keys, then a sentinel far in the
// future that moves the watermark past every window.
func events(index int) []event {
	rng := rand.New(rand.NewPCG(uint64(index), 42))
	ev := int64(1_700_000_000_000)
	var out []event
	for i := 0; i < runtimeEvents; i++ {
		ev += int64(rng.IntN(3))
		out = append(out, event{key: fmt.Sprint("k", rng.IntN(3)), ts: ev - int64(rng.IntN(runtimeBound)), v: int64(1 + rng.IntN(9))})
	}
	return append(out, event{key: sentinelKey, ts: ev + 1_000_000, v: 0})
}

type eventSpout struct {
	api.BaseSpout
	out  api.SpoutCollector
	evs  []event
	next int
	// gen, when set, replaces events; pace, when set, emits element i
	// of a task no earlier than start + pace(task)×i.
	gen   func(task int) []event
	pace  func(task int) time.Duration
	every time.Duration
	start time.Time
}

func (s *eventSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	gen := events
	if s.gen != nil {
		gen = s.gen
	}
	s.out, s.evs = out, gen(ctx.TaskIndex())
	if s.pace != nil {
		s.every = s.pace(ctx.TaskIndex())
	}
	s.start = time.Now()
	return nil
}

func (s *eventSpout) NextTuple() {
	if s.next >= len(s.evs) {
		return
	}
	if s.every > 0 && time.Since(s.start) < time.Duration(s.next)*s.every {
		return
	}
	e := s.evs[s.next]
	var id any = s.next
	if e.key == sentinelKey {
		id = nil // its window never closes: untracked
	}
	s.out.Emit(api.Values{e.key, time.UnixMilli(e.ts), e.v}, id)
	s.next++
}

func (s *eventSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("key", "ts", "v") }

// passBolt passes tuples through, anchored.
type passBolt struct {
	api.BaseBolt
	out api.BoltCollector
}

func (b *passBolt) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }
func (b *passBolt) Execute(t api.Tuple) {
	b.out.Emit(append(api.Values(nil), t.Values()...), t)
	b.out.Ack(t)
}
func (b *passBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("key", "ts", "v") }

// sinkBolt records window results.
type sinkBolt struct {
	api.BaseBolt
	out api.BoltCollector
	res *resultLog
}

type resultLog struct {
	mu   sync.Mutex
	got  map[string][]string
	want map[string]int64
	seen int
	done chan struct{}
}

func (b *sinkBolt) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }
func (b *sinkBolt) Execute(t api.Tuple) {
	defer b.out.Ack(t)
	if t.SourceStream() != "default" {
		return
	}
	id := fmt.Sprintf("%s/%d/%d", t.String(0), t.Int64(1), t.Int64(2))
	b.res.mu.Lock()
	defer b.res.mu.Unlock()
	b.res.got[id] = append(b.res.got[id], fmt.Sprintf("%s:%d", t.String(4), t.Int64(3)))
	if _, ok := b.res.want[id]; ok && t.String(4) == "final" {
		if b.res.seen++; b.res.seen == len(b.res.want) {
			close(b.res.done)
		}
	}
}
func (b *sinkBolt) DeclareOutputFields(api.OutputDeclarer) {}

// TestWindowedTopologyInProcess runs spouts → forwarding bolts → window
// bolts → sink on the in-process runtime in at-least-once mode: every
// window gets exactly one final result equal to the model's, and every
// spout tuple is acked once its windows have fired.
func TestWindowedTopologyInProcess(t *testing.T) {
	const size = 100
	res := &resultLog{got: map[string][]string{}, want: map[string]int64{}, done: make(chan struct{})}
	for i := 0; i < 2; i++ {
		for _, e := range events(i) {
			if e.key == sentinelKey {
				continue
			}
			start := e.ts - e.ts%size
			res.want[fmt.Sprintf("%s/%d/%d", e.key, start, start+size)] += e.v
		}
	}
	tb := api.NewTopologyBuilder("windowed").SetDeliveryMode(topology.AtLeastOnce).SetMessageTimeout(time.Minute)
	wb := window.NewBuilder(tb)
	wb.SetSpout("events", func() api.Spout { return &eventSpout{} }, 2, window.SpoutWatermarks{
		Timestamp: func(_ string, v api.Values) time.Time { return v[1].(time.Time) },
		Generator: func() window.Generator { return window.BoundedOutOfOrderness(runtimeBound * time.Millisecond) },
		Interval:  5 * time.Millisecond,
	})
	wb.SetBolt("pass", func() api.Bolt { return &passBolt{} }, 2, time.Minute).ShuffleGrouping("events")
	window.SetBolt(wb, "sum", 2, window.Spec[string, int64, int64, int64]{
		Assigner:    window.Tumbling(size * time.Millisecond),
		Key:         func(t api.Tuple) string { return t.String(0) },
		Value:       func(t api.Tuple) int64 { return t.Int64(2) },
		Timestamp:   func(t api.Tuple) time.Time { return t.Time(1) },
		Aggregate:   window.Sum[int64](),
		IdleTimeout: time.Minute,
		LateStream:  true,
	}).FieldsGrouping("pass", "key")
	tb.SetBolt("sink", func() api.Bolt { return &sinkBolt{res: res} }, 1).GlobalGrouping("sum").Input("sum", window.LateStream, api.Global())
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := inproc.New(topo, inproc.Options{DrainTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-res.done:
		case <-time.After(60 * time.Second):
		}
		cancel()
	}()
	sum, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	bad := 0
	for id, v := range res.want {
		if g := res.got[id]; len(g) != 1 || g[0] != fmt.Sprintf("final:%d", v) {
			if bad++; bad <= 5 {
				t.Errorf("window %s: got %v, want [final:%d]", id, g, v)
			}
		}
	}
	for id, g := range res.got {
		if _, ok := res.want[id]; !ok && id[:len(sentinelKey)] != sentinelKey {
			t.Errorf("unexpected window %s: %v", id, g)
		}
	}
	t.Logf("%d windows × keys checked, %d wrong", len(res.want), bad)
	c := sum.Component("sum")
	if c.Counters["window.late"] != 0 {
		t.Errorf("%d late elements, want none (disorder within the bound)", c.Counters["window.late"])
	}
	if c.Counters["window.watermark"] == 0 {
		t.Error("window.watermark counter was not published")
	}
	s := sum.Component("events")
	if s.Acked != 2*runtimeEvents || s.Failed != 0 {
		t.Errorf("spouts: %d acked, %d failed; want %d acked", s.Acked, s.Failed, 2*runtimeEvents)
	}
}

// TestIdleInputDoesNotHoldTheWatermark runs two spout tasks into a window
// bolt: task 0 emits 300 elements and goes silent without any end marker,
// task 1 goes on for two more seconds of wall time, then sends its end
// marker. Only because task 0 is marked idle after the idle timeout do
// the windows after its last element close; every window must still get
// exactly one final result equal to the model's.
func TestIdleInputDoesNotHoldTheWatermark(t *testing.T) {
	const size = 100
	gen := func(task int) []event {
		all := events(task)
		if task == 0 {
			return all[:300] // no end marker
		}
		return all[:2000:2000]
	}
	withEnd := func(task int) []event {
		evs := gen(task)
		if task == 1 {
			evs = append(evs, event{key: sentinelKey, ts: evs[len(evs)-1].ts + 1_000_000})
		}
		return evs
	}
	res := &resultLog{got: map[string][]string{}, want: map[string]int64{}, done: make(chan struct{})}
	for task := 0; task < 2; task++ {
		for _, e := range withEnd(task) {
			if e.key != sentinelKey {
				start := e.ts - e.ts%size
				res.want[fmt.Sprintf("%s/%d/%d", e.key, start, start+size)] += e.v
			}
		}
	}
	tb := api.NewTopologyBuilder("idle")
	wb := window.NewBuilder(tb)
	wb.SetSpout("events", func() api.Spout {
		return &eventSpout{gen: withEnd, pace: func(task int) time.Duration { return time.Duration(task) * time.Millisecond }}
	}, 2, window.SpoutWatermarks{
		Timestamp: func(_ string, v api.Values) time.Time { return v[1].(time.Time) },
		Generator: func() window.Generator { return window.BoundedOutOfOrderness(runtimeBound * time.Millisecond) },
		Interval:  5 * time.Millisecond,
	})
	window.SetBolt(wb, "sum", 2, window.Spec[string, int64, int64, int64]{
		Assigner:    window.Tumbling(size * time.Millisecond),
		Key:         func(t api.Tuple) string { return t.String(0) },
		Value:       func(t api.Tuple) int64 { return t.Int64(2) },
		Timestamp:   func(t api.Tuple) time.Time { return t.Time(1) },
		Aggregate:   window.Sum[int64](),
		IdleTimeout: 300 * time.Millisecond,
		TickEvery:   20 * time.Millisecond,
	}).FieldsGrouping("events", "key")
	tb.SetBolt("sink", func() api.Bolt { return &sinkBolt{res: res} }, 1).GlobalGrouping("sum")
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := inproc.New(topo, inproc.Options{DrainTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-res.done:
		case <-time.After(60 * time.Second):
		}
		cancel()
	}()
	sum, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	bad := 0
	for id, v := range res.want {
		if g := res.got[id]; len(g) != 1 || g[0] != fmt.Sprintf("final:%d", v) {
			if bad++; bad <= 5 {
				t.Errorf("window %s: got %v, want [final:%d]", id, g, v)
			}
		}
	}
	c := sum.Component("sum")
	if c.Counters["window.idle.marks"] == 0 {
		t.Error("no input was marked idle")
	}
	if c.Counters["window.late"] != 0 {
		t.Errorf("%d late elements", c.Counters["window.late"])
	}
	t.Logf("%d windows × keys, %d idle marks", len(res.want), c.Counters["window.idle.marks"])
}
