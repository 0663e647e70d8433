package window

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// fakeContext is the api.Context of a bolt "win" whose inputs are the
// given components (tasks listed per component).
type fakeContext struct {
	topo     *topology.Topology
	tasks    map[string][]int
	counters map[string]*api.Counter
}

func newFakeContext(inputs []topology.Input, tasks map[string][]int) *fakeContext {
	topo := &topology.Topology{Name: "t", Components: []topology.Component{
		{Name: "win", Kind: topology.Bolt, Parallelism: 1, Inputs: inputs},
		{Name: "down", Kind: topology.Bolt, Parallelism: 1, Inputs: []topology.Input{{Component: "win", Stream: WatermarkStream, Grouping: topology.All}}},
	}}
	return &fakeContext{topo: topo, tasks: tasks, counters: map[string]*api.Counter{}}
}

func (c *fakeContext) TopologyName() string          { return "t" }
func (c *fakeContext) TopologyID() string            { return "t-1" }
func (c *fakeContext) ComponentName() string         { return "win" }
func (c *fakeContext) TaskID() int                   { return 100 }
func (c *fakeContext) TaskIndex() int                { return 0 }
func (c *fakeContext) ComponentTasks(n string) []int { return c.tasks[n] }
func (c *fakeContext) Config(string) string          { return "" }
func (c *fakeContext) Logger() *zap.Logger           { return zap.NewNop() }
func (c *fakeContext) Topology() *topology.Topology  { return c.topo }
func (c *fakeContext) ResourcesDir() string          { return "" }
func (c *fakeContext) Counter(name string) *api.Counter {
	if c.counters[name] == nil {
		c.counters[name] = &api.Counter{}
	}
	return c.counters[name]
}

// emitted is one tuple a bolt emitted.
type emitted struct {
	stream  string
	values  api.Values
	anchors []api.Tuple
}

// fakeCollector records emits and acks; acking a tuple twice is recorded
// as an error.
type fakeCollector struct {
	out    []emitted
	acked  map[api.Tuple]int
	failed int
}

func newFakeCollector() *fakeCollector { return &fakeCollector{acked: map[api.Tuple]int{}} }

func (c *fakeCollector) Emit(v api.Values, anchors ...api.Tuple) {
	c.EmitStream("default", v, anchors...)
}
func (c *fakeCollector) EmitStream(s string, v api.Values, anchors ...api.Tuple) {
	c.out = append(c.out, emitted{stream: s, values: v, anchors: append([]api.Tuple(nil), anchors...)})
}
func (c *fakeCollector) EmitDirect(_ int, s string, v api.Values, anchors ...api.Tuple) {
	c.EmitStream(s, v, anchors...)
}
func (c *fakeCollector) Ack(t api.Tuple)   { c.acked[t]++ }
func (c *fakeCollector) Fail(api.Tuple)    { c.failed++ }
func (c *fakeCollector) ReportError(error) {}

// stream returns the emits on one stream.
func (c *fakeCollector) stream(s string) []emitted {
	var out []emitted
	for _, e := range c.out {
		if e.stream == s {
			out = append(out, e)
		}
	}
	return out
}

// clock is a settable fake clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.UnixMilli(1_000_000)} }
func ms(v int64) time.Time           { return time.UnixMilli(v) }
func resultKey(e emitted) string {
	return fmt.Sprintf("%v/%d/%d", e.values[0], e.values[1], e.values[2])
}
func dataTuple(task int, key string, ts, v int64) *api.BasicTuple {
	return api.NewTuple("src", "default", task, []string{"key", "ts", "v"}, key, ms(ts), v)
}
func watermarkTuple(task int, wm int64) *api.BasicTuple {
	return api.NewTuple("src", WatermarkStream, task, []string{WatermarkField}, wm)
}
