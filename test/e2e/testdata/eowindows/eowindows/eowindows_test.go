package eowindows

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/connectors/kafka"
	"github.com/egret-stream/egret/core/topology"
)

type fakeContext struct {
	topo *topology.Topology
	comp string
}

func (c *fakeContext) TopologyName() string         { return "eowindows" }
func (c *fakeContext) TopologyID() string           { return "eowindows-1" }
func (c *fakeContext) ComponentName() string        { return c.comp }
func (c *fakeContext) TaskID() int                  { return 10 }
func (c *fakeContext) TaskIndex() int               { return 0 }
func (c *fakeContext) ComponentTasks(string) []int  { return []int{1} }
func (c *fakeContext) Config(string) string         { return "" }
func (c *fakeContext) Logger() *zap.Logger          { return zap.NewNop() }
func (c *fakeContext) Counter(string) *api.Counter  { return &api.Counter{} }
func (c *fakeContext) Topology() *topology.Topology { return c.topo }
func (c *fakeContext) ResourcesDir() string         { return "" }

type lines struct {
	api.BoltCollector
	comp string
	late *lateBolt
	got  map[string]int
}

func (l *lines) Emit(v api.Values, _ ...api.Tuple) { l.got[v[1].(string)]++ }
func (l *lines) EmitStream(s string, v api.Values, _ ...api.Tuple) {
	if s == window.LateStream {
		l.late.Execute(api.NewTuple(l.comp, s, 2, window.LateFields, v...))
	}
}
func (l *lines) Ack(api.Tuple) {}

// TestModelMatchesTheWindowBolts feeds the events, and the watermarks the
// spout emits after them, to the topology's three window bolts (one task
// each, without a runtime) and compares what they write with the
// brute-force model — so the model the end-to-end test holds the output
// to is the engine's documented behaviour, and the input exercises
// finals, updates and late elements of every window kind.
func TestModelMatchesTheWindowBolts(t *testing.T) {
	events := Events(20000)
	want := Expected(events)
	topo, err := Builder(Options{Brokers: "127.0.0.1:1"}).Build()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, comp := range []string{Tumbling, Sliding, Session} {
		b := topo.Bolts[comp]()
		out := &lines{got: got, comp: comp}
		out.late = &lateBolt{out: out}
		if err := b.Prepare(&fakeContext{topo: topo.Logical, comp: comp}, out); err != nil {
			t.Fatal(err)
		}
		wm, top := window.NoWatermark, window.NoWatermark
		for _, e := range events {
			b.Execute(api.NewTuple(Spout, "default", 1, kafka.Fields, []byte(e.Key), []byte(e.Record()), "events", int32(0), int64(e.I), time.Time{}))
			top = max(top, e.TS)
			if next := top - maxDelay - 1; next > wm {
				wm = next
				b.Execute(api.NewTuple(Spout, window.WatermarkStream, 1, []string{window.WatermarkField}, wm))
			}
		}
	}
	kinds := map[string]int{}
	for l := range want {
		f := strings.Fields(l)
		if f[0] == "late" {
			kinds["late "+f[1]]++
		} else {
			kinds[f[0]+" "+f[len(f)-1]]++
		}
		if got[l] != 1 {
			t.Errorf("the model's %q was written %d times", l, got[l])
		}
	}
	for l := range got {
		if !want[l] {
			t.Errorf("%q is not in the model", l)
		}
	}
	for _, k := range []string{"tumbling final", "tumbling update", "sliding final", "sliding update", "session final", "session update"} {
		if kinds[k] == 0 {
			t.Errorf("the input makes no %s result", k)
		}
	}
	for _, k := range []string{"late tumbling", "late sliding", "late session"} {
		if kinds[k] == 0 {
			t.Errorf("the input makes no %s element", k)
		}
	}
	t.Logf("%d lines: %v", len(want), kinds)
}
