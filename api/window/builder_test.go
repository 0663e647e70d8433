package window_test

import (
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/core/topology"
)

func TestBuilderSubscribesToWatermarks(t *testing.T) {
	tb := api.NewTopologyBuilder("t")
	wb := window.NewBuilder(tb)
	wb.SetSpout("events", func() api.Spout { return &eventSpout{} }, 2, window.SpoutWatermarks{
		Timestamp: func(_ string, v api.Values) time.Time { return v[1].(time.Time) },
	})
	tb.SetSpout("plain", func() api.Spout { return &eventSpout{} }, 1)
	wb.SetBolt("pass", func() api.Bolt { return &passBolt{} }, 2, 0).ShuffleGrouping("events").ShuffleGrouping("plain")
	window.SetBolt(wb, "count", 1, window.Spec[string, int64, int64, int64]{
		Assigner:  window.TumblingCount(10),
		Value:     func(api.Tuple) int64 { return 1 },
		Aggregate: window.Count[int64](),
	}).FieldsGrouping("pass", "key")
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	inputs := func(name string) map[string]topology.Grouping {
		c, _ := topo.Logical.Component(name)
		m := map[string]topology.Grouping{}
		for _, in := range c.Inputs {
			m[in.Component+"/"+in.Stream] = in.Grouping
		}
		return m
	}
	pass := inputs("pass")
	if pass["events/"+window.WatermarkStream] != topology.All {
		t.Errorf("pass does not get the spout's watermarks with an all grouping: %v", pass)
	}
	if _, ok := pass["plain/"+window.WatermarkStream]; ok {
		t.Errorf("pass subscribes to the watermarks of a plain spout: %v", pass)
	}
	if inputs("count")["pass/"+window.WatermarkStream] != topology.All {
		t.Errorf("count does not get pass's watermarks: %v", inputs("count"))
	}
	c, _ := topo.Logical.Component("count")
	if topo.Logical.TickFrequency("count") != 100*time.Millisecond {
		t.Errorf("window bolt tick frequency %v (config %v)", topo.Logical.TickFrequency("count"), c.Config)
	}
}

func TestBuilderReportsInvalidSpecs(t *testing.T) {
	tb := api.NewTopologyBuilder("t")
	wb := window.NewBuilder(tb)
	wb.SetSpout("events", func() api.Spout { return &eventSpout{} }, 1, window.SpoutWatermarks{})
	window.SetBolt(wb, "w", 1, window.Spec[string, int64, int64, int64]{}).ShuffleGrouping("events")
	_, err := tb.Build()
	if err == nil {
		t.Fatal("Build accepted an invalid spec")
	}
	for _, want := range []string{`"events"`, "Timestamp is nil", `"w"`, "no assigner"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Build error does not say %q:\n%v", want, err)
		}
	}
}

type reconfBolt struct {
	api.BaseBolt
	got map[string]string
}

func (b *reconfBolt) Execute(api.Tuple)                      {}
func (b *reconfBolt) DeclareOutputFields(api.OutputDeclarer) {}
func (b *reconfBolt) Reconfigure(c map[string]string)        { b.got = c }

type reconfSpout struct {
	api.BaseSpout
	got map[string]string
}

func (s *reconfSpout) NextTuple()                             {}
func (s *reconfSpout) DeclareOutputFields(api.OutputDeclarer) {}
func (s *reconfSpout) Reconfigure(c map[string]string)        { s.got = c }

// TestWrappersPassOptionalInterfaces: live user settings reach the
// wrapped bolt and spout, and a wrapped bolt without work of its own has
// a Wake channel that never fires.
func TestWrappersPassOptionalInterfaces(t *testing.T) {
	b := &reconfBolt{}
	var fb api.Bolt = window.NewForwardingBolt(b, 0, nil)
	fb.(api.Reconfigurable).Reconfigure(map[string]string{"k": "v"})
	if b.got["k"] != "v" {
		t.Errorf("the forwarding bolt did not pass Reconfigure: %v", b.got)
	}
	if fb.(api.Pumper).Wake() != nil {
		t.Error("a bolt without work of its own got a Wake channel")
	}
	s := &reconfSpout{}
	ws, err := window.NewWatermarkSpout(s, window.SpoutWatermarks{Timestamp: func(string, api.Values) time.Time { return time.Now() }})
	if err != nil {
		t.Fatal(err)
	}
	ws.Reconfigure(map[string]string{"k": "w"})
	if s.got["k"] != "w" {
		t.Errorf("the watermark spout did not pass Reconfigure: %v", s.got)
	}
}
