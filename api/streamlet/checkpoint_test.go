package streamlet_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/streamlet"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/core/topology"
)

// ckContext is the api.Context of one task of a compiled component.
type ckContext struct {
	topo *topology.Topology
	comp string
}

func (c *ckContext) TopologyName() string          { return c.topo.Name }
func (c *ckContext) TopologyID() string            { return c.topo.Name + "-1" }
func (c *ckContext) ComponentName() string         { return c.comp }
func (c *ckContext) TaskID() int                   { return 100 }
func (c *ckContext) TaskIndex() int                { return 0 }
func (c *ckContext) Config(string) string          { return "" }
func (c *ckContext) Logger() *zap.Logger           { return zap.NewNop() }
func (c *ckContext) Counter(string) *api.Counter   { return &api.Counter{} }
func (c *ckContext) Topology() *topology.Topology  { return c.topo }
func (c *ckContext) ResourcesDir() string          { return "" }
func (c *ckContext) ComponentTasks(n string) []int { return []int{len(n)} } // one task per component

type ckCollector struct {
	api.BoltCollector
	rows []string
}

func (c *ckCollector) Emit(v api.Values, _ ...api.Tuple) { c.EmitStream("default", v) }
func (c *ckCollector) EmitStream(s string, v api.Values, _ ...api.Tuple) {
	if s == "default" {
		c.rows = append(c.rows, fmt.Sprint(v...))
	}
}
func (c *ckCollector) Ack(api.Tuple) {}

// TestJoinIsCheckpointedUnderEffectivelyOnce: an effectively-once
// streamlet topology is refused for its suppliers only (their position is
// not checkpointed), not for its key-by stages or its windowed join; the
// join's open windows — its elements — round-trip through a checkpoint,
// so a task restored from one joins exactly as an uninterrupted task.
func TestJoinIsCheckpointedUnderEffectivelyOnce(t *testing.T) {
	b := streamlet.New("eojoin").SetConfig(topology.KeyDeliveryMode, string(topology.EffectivelyOnce))
	b.RegisterType(1, Click{}, streamlet.JSONCodec[Click]{}).RegisterType(2, Buy{}, streamlet.JSONCodec[Buy]{})
	c := streamlet.KeyBy(streamlet.Slice(b, "clicks", func(int) []Click { return nil }), func(c Click) string { return c.User }).Named("ckey")
	bu := streamlet.KeyBy(streamlet.Slice(b, "buys", func(int) []Buy { return nil }), func(b Buy) string { return b.User }).Named("bkey")
	joined := streamlet.Join(c, bu, streamlet.Inner, streamlet.WindowConfig{Assigner: window.Tumbling(time.Second),
		AllowedLateness: time.Second, Time: window.EventTime, MaxDelay: time.Second},
		func(c Click) time.Time { return time.UnixMilli(c.At) }, func(b Buy) time.Time { return time.UnixMilli(b.At) },
		func(user string, c *Click, b *Buy) string { return fmt.Sprint(user, c.At, b.Price) }).Named("joined")
	streamlet.Consume(joined, func(string) {})
	b.DisableFusing()
	tb, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	err = topology.CheckEffectivelyOnce(topo.Logical)
	if err == nil || !strings.Contains(err.Error(), `"clicks"`) || !strings.Contains(err.Error(), `"buys"`) ||
		strings.Contains(err.Error(), "joined") || strings.Contains(err.Error(), "key") {
		t.Fatalf("effectively-once check: %v; want the two sources refused, nothing else", err)
	}

	in := []api.Tuple{
		api.NewTuple("ckey", "default", 4, []string{"key", "value"}, "ann", Click{"ann", 1_000}),
		api.NewTuple("bkey", "default", 4, []string{"key", "value"}, "ann", Buy{"ann", 1_700, 5}),
		api.NewTuple("ckey", window.WatermarkStream, 4, []string{"watermark"}, int64(1_200)),
		api.NewTuple("bkey", window.WatermarkStream, 4, []string{"watermark"}, int64(1_800)),
		api.NewTuple("ckey", "default", 4, []string{"key", "value"}, "ann", Click{"ann", 1_500}),
		api.NewTuple("ckey", window.WatermarkStream, 4, []string{"watermark"}, int64(2_500)),
		api.NewTuple("bkey", "default", 4, []string{"key", "value"}, "ann", Buy{"ann", 1_900, 7}), // an update
		api.NewTuple("bkey", window.WatermarkStream, 4, []string{"watermark"}, int64(9_000)),
		api.NewTuple("ckey", window.WatermarkStream, 4, []string{"watermark"}, int64(9_000)),
	}
	start := func(states *api.States) (api.Bolt, *ckCollector) {
		bolt := topo.Bolts["joined"]()
		out := &ckCollector{}
		if err := bolt.Prepare(&ckContext{topo: topo.Logical, comp: "joined"}, out); err != nil {
			t.Fatal(err)
		}
		if err := bolt.(api.Stateful).InitState(states); err != nil {
			t.Fatal(err)
		}
		return bolt, out
	}
	ref, refOut := start(api.NewStates())
	for _, tp := range in {
		ref.Execute(tp)
	}
	if len(refOut.rows) != 2 {
		t.Fatalf("the uninterrupted join emitted %v, want a final and an update", refOut.rows)
	}
	for at := 0; at < len(in); at++ {
		states := api.NewStates()
		first, firstOut := start(states)
		for _, tp := range in[:at] {
			first.Execute(tp)
		}
		if err := first.(api.Stateful).PreSave(1); err != nil {
			t.Fatal(err)
		}
		blob, err := states.MarshalBinary()
		if err != nil {
			t.Fatalf("checkpoint after %d tuples: %v", at, err)
		}
		restored, err := api.UnmarshalStates(blob)
		if err != nil {
			t.Fatal(err)
		}
		second, secondOut := start(restored)
		for _, tp := range in[at:] {
			second.Execute(tp)
		}
		if got := append(firstOut.rows, secondOut.rows...); !reflect.DeepEqual(got, refOut.rows) {
			t.Fatalf("restored after %d tuples the join emitted %v, uninterrupted %v", at, got, refOut.rows)
		}
	}
}
