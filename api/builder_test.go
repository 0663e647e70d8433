package api

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/topology"
)

type testSpout struct {
	BaseSpout
	declare func(OutputDeclarer)
}

func (s *testSpout) NextTuple() {}
func (s *testSpout) DeclareOutputFields(d OutputDeclarer) {
	if s.declare != nil {
		s.declare(d)
		return
	}
	d.Declare("key", "value")
}

type testBolt struct {
	BaseBolt
	declare func(OutputDeclarer)
}

func (b *testBolt) Execute(Tuple) {}
func (b *testBolt) DeclareOutputFields(d OutputDeclarer) {
	if b.declare != nil {
		b.declare(d)
	}
}

func spout() Spout { return &testSpout{} }
func bolt() Bolt   { return &testBolt{} }

func byFirst(values []any, tasks []int) []int { return tasks[:1] }
func byLast(values []any, tasks []int) []int  { return tasks[len(tasks)-1:] }
func mustValidation(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("Build succeeded, want a validation error")
	}
	var ve *topology.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Build error is %T (%v), want *topology.ValidationError", err, err)
	}
	return ve.Problems
}

func assertOneProblemWith(t *testing.T, problems []string, subs ...string) {
	t.Helper()
	for _, p := range problems {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(p, s)
		}
		if ok {
			return
		}
	}
	t.Errorf("no problem contains all of %q; problems:\n  %s", subs, strings.Join(problems, "\n  "))
}

func TestBuildValid(t *testing.T) {
	b := NewTopologyBuilder("valid")
	b.SetContainers(2).SetMessageTimeout(5*time.Second).SetConfig("user.key", "v")
	b.SetSpout("src", func() Spout {
		return &testSpout{declare: func(d OutputDeclarer) {
			d.Declare("key", "value")
			d.DeclareStream("side", "n")
			d.DeclareDirectStream("direct", "n")
		}}
	}, 2).SetMaxSpoutPending(10).SetResources(0.5, 1<<20, 0)
	b.SetBolt("fields", func() Bolt {
		return &testBolt{declare: func(d OutputDeclarer) { d.Declare("x") }}
	}, 3).FieldsGrouping("src", "key").SetTickFrequency(time.Second)
	b.SetBolt("others", bolt, 1).
		Input("src", "side", All()).
		DirectGrouping("src", "direct").
		GlobalGrouping("fields").
		CustomGrouping("src", "first", byFirst)
	b.SetBolt("more", bolt, 2).
		ShuffleGrouping("src").
		Input("src", "side", LocalOrShuffle()).
		NoneGrouping("fields")
	b.SetBolt("again", bolt, 1).CustomGrouping("src", "first", byFirst).LocalOrShuffleGrouping("fields").
		Input("src", "side", Shuffle())
	b.SetBolt("all", bolt, 1).AllGrouping("fields")

	top, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	l := top.Logical
	if l.Name != "valid" || l.Config[topology.KeyContainers] != "2" || l.Config[topology.KeyMessageTimeout] != "5s" || l.Config["user.key"] != "v" {
		t.Errorf("topology config = %v", l.Config)
	}
	if got := l.Spouts(); len(got) != 1 || got[0] != "src" {
		t.Errorf("spouts = %v", got)
	}
	if got := l.Bolts(); strings.Join(got, ",") != "fields,others,more,again,all" {
		t.Errorf("bolts (definition order) = %v", got)
	}
	src, _ := l.Component("src")
	if len(src.Outputs) != 3 || !src.Outputs[2].Direct || src.Outputs[1].ID != "side" || src.Parallelism != 2 {
		t.Errorf("src = %+v", src)
	}
	if src.Config[topology.KeyMaxSpoutPending] != "10" || src.Config[topology.KeyCPU] != "0.5" ||
		src.Config[topology.KeyRAM] != "1048576" || src.Config[topology.KeyDisk] != "" {
		t.Errorf("src config = %v", src.Config)
	}
	fields, _ := l.Component("fields")
	if fields.Inputs[0].Grouping != topology.Fields || fields.Inputs[0].Fields[0] != "key" ||
		l.TickFrequency("fields") != time.Second {
		t.Errorf("fields = %+v", fields)
	}
	others, _ := l.Component("others")
	wantGroupings := []topology.Grouping{topology.All, topology.Direct, topology.Global, topology.Custom}
	for i, g := range wantGroupings {
		if others.Inputs[i].Grouping != g {
			t.Errorf("others input %d grouping = %v, want %v", i, others.Inputs[i].Grouping, g)
		}
	}
	if others.Inputs[3].CustomName != "first" || top.CustomGroupings["first"] == nil || len(top.CustomGroupings) != 1 {
		t.Errorf("custom grouping not registered: %+v %v", others.Inputs[3], top.CustomGroupings)
	}
	if len(top.Spouts) != 1 || len(top.Bolts) != 5 || top.Types == nil {
		t.Errorf("factories: %d spouts, %d bolts", len(top.Spouts), len(top.Bolts))
	}
	if _, ok := top.Bolts["more"]().(*testBolt); !ok {
		t.Error("bolt factory not kept")
	}
}

func TestBuildProblems(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *TopologyBuilder)
		want  [][]string
	}{
		{
			name: "duplicate component",
			build: func(b *TopologyBuilder) {
				b.SetSpout("src", spout, 1)
				b.SetBolt("src", bolt, 1).ShuffleGrouping("src")
			},
			want: [][]string{{`component "src"`, "duplicate component name"}},
		},
		{
			name: "duplicate bolt",
			build: func(b *TopologyBuilder) {
				b.SetSpout("src", spout, 1)
				b.SetBolt("b", bolt, 1).ShuffleGrouping("src")
				b.SetBolt("b", bolt, 2).ShuffleGrouping("src")
			},
			want: [][]string{{`component "b"`, "duplicate component name"}},
		},
		{
			name: "nil spout factory",
			build: func(b *TopologyBuilder) {
				b.SetSpout("src", nil, 1)
			},
			want: [][]string{{`component "src"`, "spout factory is nil"}, {"no components"}},
		},
		{
			name: "nil bolt factory",
			build: func(b *TopologyBuilder) {
				b.SetSpout("src", spout, 1)
				b.SetBolt("b", nil, 1).ShuffleGrouping("src")
			},
			want: [][]string{{`component "b"`, "bolt factory is nil"}},
		},
		{
			name: "custom grouping name reused for another function",
			build: func(b *TopologyBuilder) {
				b.SetSpout("src", spout, 1)
				b.SetBolt("b1", bolt, 1).CustomGrouping("src", "pick", byFirst)
				b.SetBolt("b2", bolt, 1).CustomGrouping("src", "pick", byLast)
			},
			want: [][]string{{`component "b2"`, `"pick"`, "two different functions"}},
		},
		{
			name: "custom grouping with nil function",
			build: func(b *TopologyBuilder) {
				b.SetSpout("src", spout, 1)
				b.SetBolt("b", bolt, 1).CustomGrouping("src", "pick", nil)
			},
			want: [][]string{{`component "b"`, `"pick"`, "nil function"}},
		},
		{
			name: "DeclareOutputFields panics",
			build: func(b *TopologyBuilder) {
				b.SetSpout("src", func() Spout {
					return &testSpout{declare: func(OutputDeclarer) { panic("boom") }}
				}, 1)
			},
			want: [][]string{{`component "src"`, "panic", "boom"}},
		},
		{
			name: "factory panics",
			build: func(b *TopologyBuilder) {
				b.SetSpout("src", spout, 1)
				b.SetBolt("b", func() Bolt { panic("no bolt today") }, 1).ShuffleGrouping("src")
			},
			want: [][]string{{`component "b"`, "panic", "no bolt today"}},
		},
		{
			name: "validation problems are merged",
			build: func(b *TopologyBuilder) {
				b.SetSpout("src", spout, 0)
				b.SetBolt("b", bolt, 1).FieldsGrouping("src", "nope").ShuffleGrouping("ghost")
				b.SetContainers(0)
			},
			want: [][]string{
				{`component "src"`, "parallelism 0"},
				{`component "b"`, `undeclared field "nope"`, "key, value"},
				{`component "b"`, `unknown component "ghost"`},
				{"topology.containers", "below the minimum"},
			},
		},
		{
			name: "bad config",
			build: func(b *TopologyBuilder) {
				b.SetSpout("src", spout, 1).SetConfig(topology.KeyContainers, "2").SetMessageTimeout(0)
				b.SetConfig("topology.unknown", "1")
			},
			want: [][]string{
				{`component "src" config topology.containers`, "topology-level"},
				{`component "src" config topology.message.timeout`, "below the minimum"},
				{"topology config topology.unknown", "unknown topology setting"},
			},
		},
		{
			name: "registered type id reused",
			build: func(b *TopologyBuilder) {
				b.SetSpout("src", spout, 1)
				b.RegisterType(7, point{}, pointCodec{})
				b.RegisterType(7, other{}, pointCodec{})
			},
			want: [][]string{{"RegisterType"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewTopologyBuilder("broken")
			tc.build(b)
			top, err := b.Build()
			if top != nil {
				t.Error("Build returned a topology with an error")
			}
			problems := mustValidation(t, err)
			for _, w := range tc.want {
				assertOneProblemWith(t, problems, w...)
			}
			if len(problems) != len(tc.want) {
				t.Errorf("got %d problems, want %d:\n  %s", len(problems), len(tc.want), strings.Join(problems, "\n  "))
			}
		})
	}
}

type point struct{ X, Y int }
type other struct{ S string }

type pointCodec struct{}

func (pointCodec) Append(dst []byte, v any) ([]byte, error) { return dst, nil }
func (pointCodec) Decode(b []byte) (any, error)             { return point{}, nil }

func TestBuildReportsBadTopologyName(t *testing.T) {
	b := NewTopologyBuilder("bad name")
	b.SetSpout("src", spout, 1)
	_, err := b.Build()
	assertOneProblemWith(t, mustValidation(t, err), "topology", `"bad name"`)
	if !strings.Contains(err.Error(), `topology "bad name" is invalid`) {
		t.Errorf("error = %v", err)
	}
}

func TestBuildSameCustomFunctionTwice(t *testing.T) {
	b := NewTopologyBuilder("ok")
	b.SetSpout("src", spout, 1)
	b.SetBolt("b1", bolt, 1).CustomGrouping("src", "pick", byFirst)
	b.SetBolt("b2", bolt, 1).CustomGrouping("src", "pick", byFirst)
	top, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(top.CustomGroupings) != 1 {
		t.Errorf("custom groupings = %v", top.CustomGroupings)
	}
}

func TestBuildIsRepeatable(t *testing.T) {
	calls := 0
	b := NewTopologyBuilder("again")
	b.SetSpout("src", func() Spout { calls++; return &testSpout{} }, 1)
	b.SetBolt("b", bolt, 1).ShuffleGrouping("src").ShuffleGrouping("ghost")
	_, err1 := b.Build()
	_, err2 := b.Build()
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
		t.Errorf("Build twice: %v / %v", err1, err2)
	}
	if calls != 2 {
		t.Errorf("spout factory called %d times by two Builds, want 2 (once per Build, to declare outputs)", calls)
	}
}

type uncheckpointedBolt struct{ testBolt }

func (uncheckpointedBolt) NotCheckpointed() string { return "keeps a cache" }

// TestBuildRecordsNotCheckpointed: what a component declares with
// NotCheckpointed, and SetStateless, reach the definition, where the
// effectively-once check reads them.
func TestBuildRecordsNotCheckpointed(t *testing.T) {
	b := NewTopologyBuilder("t").SetDeliveryMode(topology.EffectivelyOnce)
	b.SetSpout("s", spout, 1)
	b.SetBolt("cache", func() Bolt { return &uncheckpointedBolt{} }, 1).ShuffleGrouping("s")
	b.SetShellBolt("py", ShellBolt("python3", "x.py").Declare("w"), 1).ShuffleGrouping("s")
	b.SetBolt("plain", bolt, 1).ShuffleGrouping("s")
	top, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"cache": "keeps a cache", "py": "a shell bolt: its subprocess keeps its state outside Egret's checkpoints", "plain": "", "s": ""} {
		c, _ := top.Logical.Component(name)
		if got := c.Config[topology.KeyNotCheckpointed]; got != want {
			t.Errorf("%s: %s = %q, want %q", name, topology.KeyNotCheckpointed, got, want)
		}
	}
	if err := topology.CheckEffectivelyOnce(top.Logical); err == nil || !strings.Contains(err.Error(), `"cache"`) || !strings.Contains(err.Error(), `"py"`) {
		t.Errorf("CheckEffectivelyOnce = %v, want cache and py named", err)
	}

	b = NewTopologyBuilder("t").SetDeliveryMode(topology.EffectivelyOnce)
	b.SetSpout("s", spout, 1)
	b.SetBolt("cache", func() Bolt { return &uncheckpointedBolt{} }, 1).ShuffleGrouping("s").SetStateless()
	if top, err = b.Build(); err != nil {
		t.Fatal(err)
	}
	if err := topology.CheckEffectivelyOnce(top.Logical); err != nil {
		t.Errorf("a stateless-marked component refused: %v", err)
	}
}
