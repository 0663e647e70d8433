package window

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/statebackends/heap"
	"github.com/egret-stream/egret/statebackends/pebble"
)

// The checkpoint property: a window bolt under effectively-once that is
// checkpointed at random points, rolled back to one of them (in the same
// task or in a new one, as after a kill -9) and fed again what followed
// that checkpoint, emits exactly what an uninterrupted bolt emits — the
// same results, updates and late elements, never an element twice.

// ckEvent is one input of the checkpoint property tests.
type ckEvent struct {
	tick bool
	wm   bool
	task int
	key  string
	ts   int64
	v    int64
}

func (e ckEvent) tuple() api.Tuple {
	switch {
	case e.tick:
		return api.NewTickTuple()
	case e.wm:
		return watermarkTuple(e.task, e.ts)
	}
	return dataTuple(e.task, e.key, e.ts, e.v)
}

func ckEvents(rng *rand.Rand, n int) []ckEvent {
	ev := map[int]int64{1: 1_000_000, 2: 1_000_000}
	var out []ckEvent
	for i := 0; i < n; i++ {
		task := 1 + rng.IntN(2)
		switch r := rng.IntN(100); {
		case r < 10:
			out = append(out, ckEvent{wm: true, task: task, ts: ev[task] - 50})
		case r < 13:
			out = append(out, ckEvent{tick: true})
		default:
			ev[task] += int64(rng.IntN(40))
			ts := ev[task] - int64(rng.IntN(50))
			if rng.IntN(15) == 0 {
				ts = ev[task] - int64(rng.IntN(3000)) // within lateness, or late
			}
			out = append(out, ckEvent{task: task, key: fmt.Sprint("k", rng.IntN(5)), ts: ts, v: int64(1 + rng.IntN(9))})
		}
	}
	for _, task := range []int{1, 2} {
		out = append(out, ckEvent{wm: true, task: task, ts: 1 << 50})
	}
	return out
}

// ckSpecs are the window bolts the property runs: every assigner, with
// lateness, early results, the late stream and the full-window function.
func ckSpecs(clk *clock) map[string]func() (api.Bolt, error) {
	key := func(t api.Tuple) string { return t.String(0) }
	val := func(t api.Tuple) int64 { return t.Int64(2) }
	ts := func(t api.Tuple) time.Time { return t.Time(1) }
	sum := func(a Assigner, lateness time.Duration, early int) func() (api.Bolt, error) {
		return func() (api.Bolt, error) {
			return NewBolt(Spec[string, int64, int64, int64]{Assigner: a, Key: key, Value: val, Timestamp: ts,
				Aggregate: Sum[int64](), AllowedLateness: lateness, EarlyCount: early, LateStream: true,
				IdleTimeout: -1, Now: clk.now})
		}
	}
	return map[string]func() (api.Bolt, error){
		"tumbling":     sum(Tumbling(100*time.Millisecond), 500*time.Millisecond, 0),
		"sliding":      sum(Sliding(300*time.Millisecond, 100*time.Millisecond), time.Second, 3),
		"session":      sum(Session(60*time.Millisecond), 400*time.Millisecond, 0),
		"no lateness":  sum(Tumbling(200*time.Millisecond), 0, 2),
		"count":        sum(SlidingCount(5, 2), 0, 0),
		"global":       sum(Global(CountTrigger(4)), 0, 0),
		"early global": sum(Global(TriggerFuncs{Element: everyThird}), 0, 0),
		"generated watermarks": func() (api.Bolt, error) {
			return NewBolt(Spec[string, int64, int64, int64]{Assigner: Sliding(200*time.Millisecond, 50*time.Millisecond),
				Key: key, Value: val, Timestamp: ts, Aggregate: Sum[int64](), AllowedLateness: 100 * time.Millisecond,
				LateStream: true, IdleTimeout: -1, Now: clk.now,
				Watermark: func() Generator { return BoundedOutOfOrderness(30 * time.Millisecond) }})
		},
		"process": func() (api.Bolt, error) {
			return NewBolt(Spec[string, int64, []int64, string]{Assigner: Tumbling(150 * time.Millisecond), Key: key,
				Value: val, Timestamp: ts, AllowedLateness: 300 * time.Millisecond, LateStream: true, IdleTimeout: -1, Now: clk.now,
				Aggregate: Process(func(e []int64) string { return fmt.Sprint(e) })})
		},
	}
}

func everyThird(s TriggerState) Action {
	if s.Count%3 == 0 {
		return Fire
	}
	return Continue
}

// ckTask is one running task of a window bolt under effectively-once,
// its keyed state in a backend of kind backend ("" for operator state
// only).
type ckTask struct {
	t       *testing.T
	b       api.Bolt
	out     *fakeCollector
	states  *api.States
	backend string
	kb      statebackend.Backend
}

// ckpt is a task's checkpoint: its operator states and its backend's
// snapshot stream.
type ckpt struct {
	operator, keyed []byte
}

func newCKTask(t *testing.T, mk func() (api.Bolt, error), backend string, c ckpt) *ckTask {
	t.Helper()
	b, err := mk()
	if err != nil {
		t.Fatal(err)
	}
	ctx := newFakeContext([]topology.Input{
		{Component: "src", Stream: "default", Grouping: topology.Fields, Fields: []string{"key"}},
		{Component: "src", Stream: WatermarkStream, Grouping: topology.All},
	}, map[string][]int{"src": {1, 2}})
	ctx.topo.Config = map[string]string{topology.KeyDeliveryMode: string(topology.EffectivelyOnce)}
	k := &ckTask{t: t, b: b, out: newFakeCollector(), backend: backend}
	if err := b.Prepare(ctx, k.out); err != nil {
		t.Fatal(err)
	}
	k.restore(c)
	return k
}

// restore is the runtime's restore: InitState with the checkpoint's
// states, decoded from their bytes into a new backend.
func (k *ckTask) restore(c ckpt) {
	k.t.Helper()
	var states *api.States
	var err error
	if k.backend == "" {
		states, err = api.UnmarshalStates(c.operator)
	} else {
		if k.kb != nil {
			k.kb.Close()
		}
		o := statebackend.Options{Dir: k.t.TempDir(), MaxParallelism: 128, Groups: keygroup.Range{Start: 0, End: 128}}
		if k.kb, err = statebackend.Open(k.backend, o); err != nil {
			k.t.Fatal(err)
		}
		k.t.Cleanup(func() { k.kb.Close() })
		if c.keyed != nil { // nil: checkpoint 0, nothing to restore
			if err := k.kb.Restore(bytes.NewReader(c.keyed)); err != nil {
				k.t.Fatal(err)
			}
		}
		states, err = api.OpenStates(k.kb, o, nil, c.operator)
	}
	if err != nil {
		k.t.Fatal(err)
	}
	if err := k.b.(api.Stateful).InitState(states); err != nil {
		k.t.Fatal(err)
	}
	k.states = states
}

// save is the runtime's checkpoint: PreSave, then the states' bytes and
// the backend's snapshot.
func (k *ckTask) save(id int64) ckpt {
	k.t.Helper()
	if err := k.b.(api.Stateful).PreSave(id); err != nil {
		k.t.Fatal(err)
	}
	var c ckpt
	var err error
	if c.operator, err = k.states.MarshalBinary(); err != nil {
		k.t.Fatal(err)
	}
	if k.kb != nil {
		snap, err := k.kb.Snapshot()
		if err != nil {
			k.t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := snap.WriteTo(&b); err != nil {
			k.t.Fatal(err)
		}
		snap.Release()
		c.keyed = b.Bytes()
	}
	return c
}

// step feeds one event and returns what it emitted, sorted (windows that
// close at one watermark fire in no particular order).
func (k *ckTask) step(e ckEvent) []string {
	n := len(k.out.out)
	k.b.Execute(e.tuple())
	var got []string
	for _, o := range k.out.out[n:] {
		if o.stream != LateStream && len(o.anchors) != 0 {
			k.t.Fatalf("a result anchored under effectively-once: %v", o.values)
		}
		got = append(got, fmt.Sprintf("%s %v", o.stream, o.values))
	}
	sort.Strings(got)
	return got
}

// The property runs with operator state only (every key in memory,
// encoded whole) and with keyed state and timers on the heap and pebble
// backends (keys loaded on use or by their timer, dropped after each
// checkpoint).
func TestCheckpointRestoreMatchesUninterruptedRun(t *testing.T) {
	for _, backend := range []string{"", heap.Name, pebble.Name} {
		for name := range ckSpecs(newClock()) {
			seeds := map[string]uint64{"": 6, heap.Name: 3, pebble.Name: 1}[backend] // pebble: a store per restore

			for seed := uint64(1); seed <= seeds; seed++ {
				t.Run(fmt.Sprintf("%s/%s/seed%d", cmp.Or(backend, "operator"), name, seed), func(t *testing.T) {
					checkCheckpoints(t, backend, name, seed)
				})
			}
		}
	}
}

func checkCheckpoints(t *testing.T, backend, name string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 36))
	events := ckEvents(rng, 1500)
	// Both runs read the clock of the event they process.
	clk := newClock()
	mk := ckSpecs(clk)[name]
	clockAt := func(i int) time.Time { return time.UnixMilli(1_000_000 + int64(i)*7) }

	ref := newCKTask(t, mk, backend, ckpt{})
	var want [][]string
	for i, e := range events {
		clk.t = clockAt(i)
		want = append(want, ref.step(e))
	}

	// The interrupted run: checkpoints at random events, and now and then
	// a failure some events after one, rolled back to the last
	// checkpoint in the same task or in a new one.
	task := newCKTask(t, mk, backend, ckpt{})
	got := make([][]string, len(events))
	var last ckpt
	ckptAt, rollbacks := 0, 0
	var id int64
	for i := 0; i < len(events); {
		clk.t = clockAt(i)
		got[i] = task.step(events[i])
		i++
		switch r := rng.IntN(100); {
		case r < 4:
			id++
			last, ckptAt = task.save(id), i
		case r < 6 && rollbacks < 12:
			rollbacks++
			if rng.IntN(2) == 0 {
				task = newCKTask(t, mk, backend, last) // the process died
			} else {
				task.restore(last) // another process died: rollback in place
			}
			i = ckptAt // what followed the checkpoint is replayed
		}
	}
	if rollbacks == 0 {
		t.Fatal("no rollback happened")
	}
	results := 0
	for i := range events {
		results += len(want[i])
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("event %d (%+v): after %d rollbacks emitted %v, the uninterrupted run %v", i, events[i], rollbacks, got[i], want[i])
		}
	}
	if results == 0 {
		t.Fatal("nothing emitted")
	}
	t.Logf("%d events, %d rollbacks, %d tuples emitted", len(events), rollbacks, results)
}

// ckSpout is a stateful spout: its position is in its states.
type ckSpout struct {
	api.BaseSpout
	out       api.SpoutCollector
	pos       *api.State[string, int64]
	completed []int64
}

func (s *ckSpout) Open(_ api.Context, out api.SpoutCollector) error { s.out = out; return nil }
func (s *ckSpout) NextTuple() {
	n, _ := s.pos.Get("")
	s.out.Emit(api.Values{n}, nil)
	s.pos.Put("", n+1)
}
func (s *ckSpout) InitState(st *api.States) (err error) {
	s.pos, err = api.NewState[string, int64](st, "position")
	return err
}
func (s *ckSpout) PreSave(int64) error                      { return nil }
func (s *ckSpout) CheckpointComplete(id int64)              { s.completed = append(s.completed, id) }
func (s *ckSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("ts") }

type spoutOut struct {
	api.SpoutCollector
	got []string
}

func (c *spoutOut) Emit(v api.Values, _ any) { c.got = append(c.got, fmt.Sprint("data ", v[0])) }
func (c *spoutOut) EmitStream(s string, v api.Values, _ any) {
	c.got = append(c.got, fmt.Sprint(s, " ", v[0]))
}

// TestWatermarkSpoutCheckpointsItsSpoutAndGenerator: after a rollback the
// wrapped spout rewinds (its states pass through the wrapper) and the
// watermarks after the replayed tuples are those emitted before.
func TestWatermarkSpoutCheckpointsItsSpoutAndGenerator(t *testing.T) {
	open := func(blob []byte) (*WatermarkSpout, *ckSpout, *spoutOut, *api.States) {
		inner := &ckSpout{}
		ws, err := NewWatermarkSpout(inner, SpoutWatermarks{Emission: PerRecord,
			Timestamp: func(_ string, v api.Values) time.Time { return time.UnixMilli(1000 * v[0].(int64)) }})
		if err != nil {
			t.Fatal(err)
		}
		out := &spoutOut{}
		ctx := newFakeContext(nil, nil)
		if err := ws.Open(ctx, out); err != nil {
			t.Fatal(err)
		}
		states, err := api.UnmarshalStates(blob)
		if err != nil {
			t.Fatal(err)
		}
		var stateful api.Stateful = ws
		if err := stateful.InitState(states); err != nil {
			t.Fatal(err)
		}
		return ws, inner, out, states
	}
	ws, _, out, states := open(nil)
	for range 3 {
		ws.NextTuple()
	}
	if err := ws.PreSave(1); err != nil {
		t.Fatal(err)
	}
	blob, err := states.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		ws.NextTuple()
	}
	want := append([]string(nil), out.got[6:]...)
	ws2, inner2, out2, _ := open(blob)
	for range 3 {
		ws2.NextTuple()
	}
	if !reflect.DeepEqual(out2.got, want) {
		t.Fatalf("after the restore the spout emitted %v, before the failure %v", out2.got, want)
	}
	ws2.CheckpointComplete(1)
	if !reflect.DeepEqual(inner2.completed, []int64{1}) {
		t.Fatalf("the wrapped spout saw completed checkpoints %v", inner2.completed)
	}
	if got := ws2.NotCheckpointed(); got != "" {
		t.Fatalf("a watermark spout around a checkpointable spout says %q", got)
	}
}

// TestForwardingBoltCheckpointsItsBoltAndWatermarks: the forwarding
// bolt's input watermarks and its wrapped bolt's states survive a
// restore, so a rollback does not send a watermark twice or skip one.
func TestForwardingBoltCheckpointsItsBoltAndWatermarks(t *testing.T) {
	open := func(blob []byte) (*ForwardingBolt, *fakeCollector, *api.States) {
		clk := newClock()
		f := NewForwardingBolt(&countBolt{}, -1, clk.now)
		ctx := newFakeContext([]topology.Input{
			{Component: "src", Stream: "default", Grouping: topology.Shuffle},
			{Component: "src", Stream: WatermarkStream, Grouping: topology.All},
		}, map[string][]int{"src": {1, 2}})
		out := newFakeCollector()
		if err := f.Prepare(ctx, out); err != nil {
			t.Fatal(err)
		}
		states, err := api.UnmarshalStates(blob)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.InitState(states); err != nil {
			t.Fatal(err)
		}
		return f, out, states
	}
	f, out, states := open(nil)
	f.Execute(watermarkTuple(1, 100))
	f.Execute(watermarkTuple(2, 50))
	f.Execute(dataTuple(1, "a", 0, 1))
	if err := f.PreSave(1); err != nil {
		t.Fatal(err)
	}
	blob, _ := states.MarshalBinary()
	n := len(out.out)
	later := []api.Tuple{watermarkTuple(2, 70), dataTuple(2, "b", 0, 1), watermarkTuple(1, 200), watermarkTuple(2, 300)}
	for _, tp := range later {
		f.Execute(tp)
	}
	want := fmt.Sprint(out.out[n:])
	f2, out2, _ := open(blob)
	for _, tp := range later {
		f2.Execute(tp)
	}
	if got := fmt.Sprint(out2.out); got != want {
		t.Fatalf("after the restore the forwarding bolt emitted %s, before the failure %s", got, want)
	}
}

// countBolt is a stateful bolt that emits its running count.
type countBolt struct {
	out api.BoltCollector
	n   *api.State[string, int64]
}

func (b *countBolt) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }
func (b *countBolt) Execute(t api.Tuple) {
	n, _ := b.n.Get("")
	b.n.Put("", n+1)
	b.out.Emit(api.Values{n + 1})
}
func (b *countBolt) InitState(st *api.States) (err error) {
	b.n, err = api.NewState[string, int64](st, "n")
	return err
}
func (b *countBolt) PreSave(int64) error                      { return nil }
func (b *countBolt) Cleanup()                                 {}
func (b *countBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("n") }

// TestKeyedStateOnlyForKeyedInputs: with a state backend, a window bolt
// whose inputs are grouped by fields keeps its keys in keyed state; one
// with another grouping (a key need not reach the task owning its key
// group) keeps them in an operator state.
func TestKeyedStateOnlyForKeyedInputs(t *testing.T) {
	for grouping, keyed := range map[topology.Grouping]bool{topology.Fields: true, topology.Global: false, topology.Shuffle: false} {
		b, err := NewBolt(Spec[string, int64, int64, int64]{Assigner: Tumbling(time.Second), Key: func(t api.Tuple) string { return t.String(0) },
			Value: func(t api.Tuple) int64 { return t.Int64(2) }, Timestamp: func(t api.Tuple) time.Time { return t.Time(1) },
			Aggregate: Sum[int64](), IdleTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx := newFakeContext([]topology.Input{
			{Component: "src", Stream: "default", Grouping: grouping, Fields: []string{"key"}},
			{Component: "src", Stream: WatermarkStream, Grouping: topology.All},
		}, map[string][]int{"src": {1}})
		ctx.topo.Config = map[string]string{topology.KeyDeliveryMode: string(topology.EffectivelyOnce)}
		if err := b.Prepare(ctx, newFakeCollector()); err != nil {
			t.Fatal(err)
		}
		o := statebackend.Options{Dir: t.TempDir(), MaxParallelism: 128, Groups: keygroup.Range{Start: 0, End: 128}}
		kb, err := statebackend.Open(heap.Name, o)
		if err != nil {
			t.Fatal(err)
		}
		states, err := api.OpenStates(kb, o, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.InitState(states); err != nil {
			t.Fatal(err)
		}
		if _, got := b.store.(*keyedKeys[string, int64, int64, int64]); got != keyed {
			t.Errorf("input grouped %v: keys in keyed state %v, want %v", grouping, got, keyed)
		}
		kb.Close()
	}
}
