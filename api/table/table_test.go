package table

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

type fakeContext struct{ tasks map[string][]int }

func (c *fakeContext) TopologyName() string          { return "t" }
func (c *fakeContext) TopologyID() string            { return "t-1" }
func (c *fakeContext) ComponentName() string         { return "op" }
func (c *fakeContext) TaskID() int                   { return 10 }
func (c *fakeContext) TaskIndex() int                { return 0 }
func (c *fakeContext) ComponentTasks(n string) []int { return c.tasks[n] }
func (c *fakeContext) Config(string) string          { return "" }
func (c *fakeContext) Logger() *zap.Logger           { return zap.NewNop() }
func (c *fakeContext) Counter(string) *api.Counter   { return &api.Counter{} }
func (c *fakeContext) Topology() *topology.Topology  { return &topology.Topology{Name: "t"} }
func (c *fakeContext) ResourcesDir() string          { return "" }

type collector struct {
	rows  []api.Values
	ends  int
	acked int
}

func (c *collector) Emit(v api.Values, _ ...api.Tuple) { c.EmitStream("default", v) }
func (c *collector) EmitStream(s string, v api.Values, _ ...api.Tuple) {
	if s == EndStream {
		c.ends++
		return
	}
	c.rows = append(c.rows, append(api.Values(nil), v...))
}
func (c *collector) EmitDirect(_ int, s string, v api.Values, _ ...api.Tuple) { c.EmitStream(s, v) }
func (c *collector) Ack(api.Tuple)                                            { c.acked++ }
func (c *collector) Fail(api.Tuple)                                           {}
func (c *collector) ReportError(error)                                        {}

func tup(stream string, task int, vals ...any) api.Tuple {
	return api.NewTuple("src", stream, task, nil, vals...)
}

func TestTopNKeepsTheLargestInOrder(t *testing.T) {
	agg := TopN(3, func(a, b int) bool { return a < b })
	acc := agg.Init()
	for _, v := range []int{5, 1, 9, 7, 9, 3, 8} {
		acc = agg.Add(acc, v)
	}
	if got := agg.Result(acc); !reflect.DeepEqual(got, []int{9, 9, 8}) {
		t.Errorf("top 3 of 5 1 9 7 9 3 8: %v", got)
	}
}

func TestLatestAndDistinctCount(t *testing.T) {
	type row struct{ at, v int64 }
	l := Latest(func(r row) int64 { return r.at })
	acc := l.Init()
	for _, r := range []row{{1, 10}, {5, 50}, {3, 30}, {5, 51}} {
		acc = l.Add(acc, r)
	}
	if got := l.Result(acc); got != (row{5, 51}) {
		t.Errorf("latest: %v, want {5 51} (of equal orders the later)", got)
	}
	d := DistinctCount[string]()
	dacc := d.Init()
	for _, s := range []string{"a", "b", "a", "c", "b"} {
		dacc = d.Add(dacc, s)
	}
	if n := d.Result(dacc); n != 3 {
		t.Errorf("distinct of a b a c b: %d", n)
	}
}

// TestGroupBoltUpsertsAtTheEnd: a group bolt emits each changed group
// once per flush, and flushes when every source task ended.
func TestGroupBoltUpsertsAtTheEnd(t *testing.T) {
	b, err := NewGroupBolt(GroupSpec[string, int64, int64, int64]{
		Key:          func(t api.Tuple) string { return t.String(0) },
		Value:        func(t api.Tuple) int64 { return t.Int64(1) },
		Aggregate:    sum{},
		Output:       func(k string, v int64, emit func(api.Values)) { emit(api.Values{k, v}) },
		OutputFields: []string{"k", "sum"},
		Flush:        time.Hour,
		End:          End{Component: "src", Stream: "end", Forward: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := &collector{}
	if err := b.Prepare(&fakeContext{tasks: map[string][]int{"src": {1, 2}}}, out); err != nil {
		t.Fatal(err)
	}
	for _, in := range []api.Tuple{tup("default", 1, "a", int64(1)), tup("default", 2, "b", int64(2)), tup("default", 1, "a", int64(3)), tup("end", 1, int64(0))} {
		b.Execute(in)
	}
	if len(out.rows) != 0 {
		t.Fatalf("emitted before the flush and the end: %v", out.rows)
	}
	b.Execute(tup("end", 2, int64(0)))
	sort.Slice(out.rows, func(i, j int) bool { return out.rows[i][0].(string) < out.rows[j][0].(string) })
	if want := []api.Values{{"a", int64(4)}, {"b", int64(2)}}; !reflect.DeepEqual(out.rows, want) || out.ends != 1 {
		t.Errorf("at the end: %v and %d end markers, want %v and 1", out.rows, out.ends, want)
	}
	if out.acked != 5 {
		t.Errorf("acked %d of 5 inputs", out.acked)
	}
}

type sum struct{}

func (sum) Init() int64            { return 0 }
func (sum) Add(a, v int64) int64   { return a + v }
func (sum) Merge(a, b int64) int64 { return a + b }
func (sum) Result(a int64) int64   { return a }

// TestJoinBoltEmitsEachPairOnceUnderItsCondition joins both arrival
// orders and applies Where.
func TestJoinBoltEmitsEachPairOnceUnderItsCondition(t *testing.T) {
	b, err := NewJoinBolt(JoinSpec[int64, int64, int64]{
		IsLeft:       func(t api.Tuple) bool { return t.SourceStream() == "l" },
		LeftKey:      func(t api.Tuple) int64 { return t.Int64(0) },
		RightKey:     func(t api.Tuple) int64 { return t.Int64(0) },
		Left:         func(t api.Tuple) int64 { return t.Int64(1) },
		Right:        func(t api.Tuple) int64 { return t.Int64(1) },
		Where:        func(l, r *int64) bool { return *r >= *l },
		Output:       func(l, r *int64) api.Values { return api.Values{*l, *r} },
		OutputFields: []string{"l", "r"},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := &collector{}
	if err := b.Prepare(&fakeContext{}, out); err != nil {
		t.Fatal(err)
	}
	for _, in := range []api.Tuple{
		tup("r", 1, int64(1), int64(5)), // before its left
		tup("l", 1, int64(1), int64(3)), // joins r=5
		tup("r", 1, int64(1), int64(2)), // 2 < 3: the condition rejects it
		tup("r", 1, int64(2), int64(9)), // another key
		tup("l", 1, int64(1), int64(5)), // joins r=5
	} {
		b.Execute(in)
	}
	if want := []api.Values{{int64(3), int64(5)}, {int64(5), int64(5)}}; !reflect.DeepEqual(out.rows, want) {
		t.Errorf("joined %v, want %v", out.rows, want)
	}
	if _, err := NewJoinBolt(JoinSpec[int64, int64, int64]{}); err == nil {
		t.Error("an empty JoinSpec was accepted")
	}
}
