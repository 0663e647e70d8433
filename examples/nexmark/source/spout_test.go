package source

import (
	"testing"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/examples/nexmark/generator"
)

type fakeContext struct {
	index, tasks int
	config       map[string]string
	topo         *topology.Topology
}

func (c *fakeContext) TopologyName() string         { return "nexmark" }
func (c *fakeContext) TopologyID() string           { return "nexmark-1" }
func (c *fakeContext) ComponentName() string        { return "events" }
func (c *fakeContext) TaskID() int                  { return c.index + 1 }
func (c *fakeContext) TaskIndex() int               { return c.index }
func (c *fakeContext) ComponentTasks(string) []int  { return make([]int, c.tasks) }
func (c *fakeContext) Config(k string) string       { return c.config[k] }
func (c *fakeContext) Logger() *zap.Logger          { return zap.NewNop() }
func (c *fakeContext) Counter(string) *api.Counter  { return &api.Counter{} }
func (c *fakeContext) Topology() *topology.Topology { return c.topo }
func (c *fakeContext) ResourcesDir() string         { return "" }

type emit struct {
	stream string
	vals   api.Values
	id     any
}

type collector struct{ out []emit }

func (c *collector) Emit(v api.Values, id any) { c.EmitStream("default", v, id) }
func (c *collector) EmitStream(s string, v api.Values, id any) {
	c.out = append(c.out, emit{s, append(api.Values(nil), v...), id})
}
func (c *collector) EmitDirect(_ int, s string, v api.Values, id any) { c.EmitStream(s, v, id) }
func (c *collector) ReportError(error)                                {}

func open(t *testing.T, index, tasks int, mode topology.DeliveryMode, events int64) (*Spout, *collector) {
	t.Helper()
	st := Settings{Events: events, Gen: generator.Default()}
	ctx := &fakeContext{index: index, tasks: tasks, config: st.Config(),
		topo: &topology.Topology{Name: "nexmark", Config: map[string]string{topology.KeyDeliveryMode: string(mode)}}}
	s := NewSpout().(*Spout)
	out := &collector{}
	if err := s.Open(ctx, out); err != nil {
		t.Fatal(err)
	}
	if err := s.InitState(api.NewStates()); err != nil {
		t.Fatal(err)
	}
	return s, out
}

// TestSpoutSplitsReplaysAndRewinds: two tasks emit every event once, as
// the generator makes them, then their end tuple; a failed event is
// emitted again with its position; a restored position rewinds the task.
func TestSpoutSplitsReplaysAndRewinds(t *testing.T) {
	const events = 1000
	g, _ := generator.New(generator.Default())
	seen := map[int64]bool{}
	for task := 0; task < 2; task++ {
		s, out := open(t, task, 2, topology.AtLeastOnce, events)
		for i := 0; i < 10; i++ {
			s.NextTuple()
		}
		ends := 0
		for _, e := range out.out {
			if e.stream == EndStream {
				ends++
				continue
			}
			pos := e.id.(int64)
			if seen[pos] || int(pos)%2 != task {
				t.Fatalf("task %d emitted position %d (seen before: %v)", task, pos, seen[pos])
			}
			seen[pos] = true
			ev := g.At(pos)
			if want := AppendValues(nil, &ev); e.stream != StreamOf(ev.Kind) || len(e.vals) != len(want) || e.vals[0] != want[0] {
				t.Fatalf("position %d: %s %v, want %s %v", pos, e.stream, e.vals, StreamOf(ev.Kind), want)
			}
		}
		if ends != 1 {
			t.Fatalf("task %d emitted %d end tuples, want 1", task, ends)
		}
		// At-least-once: a failed event comes again.
		s.Fail(int64(task + 4))
		out.out = nil
		s.NextTuple()
		if len(out.out) != 1 || out.out[0].id != int64(task+4) {
			t.Fatalf("after Fail(%d): %v", task+4, out.out)
		}
	}
	if len(seen) != events {
		t.Fatalf("the tasks emitted %d distinct events, want %d", len(seen), events)
	}

	// Effectively-once: the position is the state; restoring it rewinds.
	s, out := open(t, 0, 1, topology.EffectivelyOnce, 0)
	states := api.NewStates()
	if err := s.InitState(states); err != nil {
		t.Fatal(err)
	}
	s.NextTuple()
	if err := s.PreSave(1); err != nil {
		t.Fatal(err)
	}
	if out.out[0].id != nil {
		t.Fatalf("effectively-once emitted a tracked tuple: %v", out.out[0].id)
	}
	first := len(out.out)
	s.NextTuple()
	if err := s.InitState(states); err != nil { // the rollback to checkpoint 1
		t.Fatal(err)
	}
	out.out = nil
	s.NextTuple()
	ev := g.At(int64(first))
	if want := AppendValues(nil, &ev); out.out[0].vals[0] != want[0] || out.out[0].stream != StreamOf(ev.Kind) {
		t.Fatalf("after the rollback the spout emitted %v, want position %d: %v", out.out[0].vals, first, want)
	}
}
