package instance

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/core/tuple"
	"github.com/egret-stream/egret/daemons/wire"
)

type nopSpout struct {
	api.BaseSpout
	streams func(api.OutputDeclarer)
}

func (s *nopSpout) NextTuple()                               {}
func (s *nopSpout) DeclareOutputFields(d api.OutputDeclarer) { s.streams(d) }

type nopBolt struct{ api.BaseBolt }

func (nopBolt) Execute(api.Tuple)                      {}
func (nopBolt) DeclareOutputFields(api.OutputDeclarer) {}

// routeTopology has two spouts and one bolt per grouping kind, each bolt
// with 4 tasks.
func routeTopology(t testing.TB, custom api.CustomGroupingFunc) *api.Topology {
	t.Helper()
	declare := func(d api.OutputDeclarer) {
		d.Declare("key", "n")
		d.DeclareDirectStream("direct", "n")
	}
	b := api.NewTopologyBuilder("routes")
	b.SetSpout("src", func() api.Spout { return &nopSpout{streams: declare} }, 1)
	b.SetSpout("far", func() api.Spout { return &nopSpout{streams: declare} }, 1)
	bolt := func() api.Bolt { return nopBolt{} }
	b.SetBolt("local", bolt, 4).LocalOrShuffleGrouping("src").LocalOrShuffleGrouping("far")
	b.SetBolt("shuffle", bolt, 4).ShuffleGrouping("src")
	b.SetBolt("none", bolt, 4).NoneGrouping("src")
	b.SetBolt("fields", bolt, 4).FieldsGrouping("src", "key")
	b.SetBolt("all", bolt, 4).AllGrouping("src")
	b.SetBolt("global", bolt, 4).GlobalGrouping("src")
	b.SetBolt("direct", bolt, 4).DirectGrouping("src", "direct")
	b.SetBolt("custom", bolt, 4).CustomGrouping("src", "pick", custom)
	top, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// twoContainerLayout puts src and the first two tasks of every bolt in
// container 1, the other two bolt tasks in container 2, and far alone in
// container 3. Task ids are assigned in an order that is not sorted by
// container so that tests notice a confusion of ids and indexes.
func twoContainerLayout(top *api.Topology) *plan.Layout {
	ids := plan.TaskIDs(top.Logical)
	var c1, c2, c3 []plan.Instance
	for _, in := range ids {
		switch {
		case in.Component == "src":
			c1 = append(c1, in)
		case in.Component == "far":
			c3 = append(c3, in)
		case in.Index == 1 || in.Index == 3:
			c1 = append(c1, in)
		default:
			c2 = append(c2, in)
		}
	}
	pp := &plan.PackingPlan{Containers: []plan.Container{{ID: 1, Instances: c1}, {ID: 2, Instances: c2}, {ID: 3, Instances: c3}}}
	return pp.Layout()
}

func routesOf(t testing.TB, top *api.Topology, layout *plan.Layout, component string) map[string]*route {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	routes, err := buildRoutes(top, wire.NewStreamTable(top.Logical), layout, component, layout.ContainerOf[layout.Tasks[component][0]], rng, top.Types)
	if err != nil {
		t.Fatal(err)
	}
	return routes
}

func targetFor(t testing.TB, r *route, bolt string) *target {
	t.Helper()
	for _, tg := range r.targets {
		if tg.bolt == bolt {
			return tg
		}
	}
	t.Fatalf("no target for bolt %q", bolt)
	return nil
}

// chooseN calls choose n times with values from gen and counts the
// destinations.
func chooseN(t *testing.T, tg *target, n int, gen func(i int) []any) map[int]int {
	t.Helper()
	counts := map[int]int{}
	var dst []int
	for i := 0; i < n; i++ {
		var err error
		dst, err = tg.choose(gen(i), dst[:0])
		if err != nil {
			t.Fatalf("choose: %v", err)
		}
		for _, d := range dst {
			counts[d]++
		}
	}
	return counts
}

func keyed(i int) []any { return []any{"key-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)), i} }

func TestLocalOrShuffle(t *testing.T) {
	top := routeTopology(t, func([]any, []int) []int { return nil })
	layout := twoContainerLayout(top)
	all := layout.Tasks["local"]
	var inC1 []int
	for _, task := range all {
		if layout.ContainerOf[task] == 1 {
			inC1 = append(inC1, task)
		}
	}
	if len(inC1) != 2 || len(all) != 4 {
		t.Fatalf("layout: local tasks %v, in container 1 %v", all, inC1)
	}

	// src shares container 1 with two of the bolt's tasks: only those.
	near := chooseN(t, targetFor(t, routesOf(t, top, layout, "src")["default"], "local"), 100, keyed)
	if got := sortedKeys(near); !reflect.DeepEqual(got, inC1) {
		t.Errorf("local-or-shuffle from container 1 reached %v, want only the local tasks %v", got, inC1)
	}
	if near[inC1[0]] != 50 || near[inC1[1]] != 50 {
		t.Errorf("local-or-shuffle is not even over the local tasks: %v", near)
	}

	// far is alone in container 3: it falls back to every task.
	far := chooseN(t, targetFor(t, routesOf(t, top, layout, "far")["default"], "local"), 100, keyed)
	if got := sortedKeys(far); !reflect.DeepEqual(got, all) {
		t.Errorf("local-or-shuffle without local tasks reached %v, want all %v", got, all)
	}
	for _, task := range all {
		if far[task] != 25 {
			t.Errorf("fallback is not even: %v", far)
			break
		}
	}
}

func TestChoose(t *testing.T) {
	var gotTasks [][]int
	custom := func(values []any, tasks []int) []int {
		gotTasks = append(gotTasks, slices.Clone(tasks))
		n := values[1].(int)
		switch {
		case n%10 == 9:
			return nil // dropped for this bolt
		case n%10 == 8:
			return []int{tasks[0], tasks[3]}
		default:
			return []int{tasks[n%len(tasks)]}
		}
	}
	top := routeTopology(t, custom)
	layout := twoContainerLayout(top)
	routes := routesOf(t, top, layout, "src")
	def := routes["default"]
	if def.index != 1 || def.info.ID != "default" || def.info.Component != "src" {
		t.Errorf("default route = index %d %+v", def.index, def.info)
	}
	var bolts []string
	for _, tg := range def.targets {
		bolts = append(bolts, tg.bolt)
	}
	if strings.Join(bolts, ",") != "all,custom,fields,global,local,none,shuffle" {
		t.Errorf("targets of src/default: %v", bolts)
	}

	t.Run("shuffle and none are round robin", func(t *testing.T) {
		for _, bolt := range []string{"shuffle", "none"} {
			counts := chooseN(t, targetFor(t, def, bolt), 400, keyed)
			for _, task := range layout.Tasks[bolt] {
				if counts[task] != 100 {
					t.Errorf("%s: counts %v, want 100 each", bolt, counts)
					break
				}
			}
		}
	})
	t.Run("fields follows the documented hash", func(t *testing.T) {
		tg := targetFor(t, def, "fields")
		tasks := layout.Tasks["fields"]
		counts := map[int]int{}
		for i := 0; i < 500; i++ {
			vals := keyed(i)
			dst, err := tg.choose(vals, nil)
			if err != nil {
				t.Fatal(err)
			}
			h, err := tuple.HashValues(nil, vals[0])
			if err != nil {
				t.Fatal(err)
			}
			if want := tasks[keygroup.TaskIndex(h, len(tasks), keygroup.DefaultMaxParallelism)]; len(dst) != 1 || dst[0] != want {
				t.Fatalf("fields(%v) chose %v, want [%d]", vals[0], dst, want)
			}
			counts[dst[0]]++
		}
		if len(counts) != 4 {
			t.Errorf("fields grouping used %d of 4 tasks: %v", len(counts), counts)
		}
	})
	t.Run("all", func(t *testing.T) {
		counts := chooseN(t, targetFor(t, def, "all"), 10, keyed)
		for _, task := range layout.Tasks["all"] {
			if counts[task] != 10 {
				t.Errorf("all: %v", counts)
			}
		}
	})
	t.Run("global picks the lowest task", func(t *testing.T) {
		counts := chooseN(t, targetFor(t, def, "global"), 10, keyed)
		lowest := slices.Min(layout.Tasks["global"])
		if len(counts) != 1 || counts[lowest] != 10 {
			t.Errorf("global: %v, want all 10 at task %d", counts, lowest)
		}
	})
	t.Run("direct refuses choose", func(t *testing.T) {
		tg := targetFor(t, routes["direct"], "direct")
		if _, err := tg.choose([]any{1}, nil); err == nil || !strings.Contains(err.Error(), "EmitDirect") {
			t.Errorf("choose on a direct target: %v", err)
		}
	})
	t.Run("custom", func(t *testing.T) {
		tg := targetFor(t, def, "custom")
		tasks := layout.Tasks["custom"]
		gotTasks = nil
		for i := 0; i < 20; i++ {
			dst, err := tg.choose([]any{"k", i}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var want []int
			switch {
			case i%10 == 9:
			case i%10 == 8:
				want = []int{tasks[0], tasks[3]}
			default:
				want = []int{tasks[i%4]}
			}
			if !slices.Equal(dst, want) {
				t.Errorf("custom(%d) chose %v, want %v", i, dst, want)
			}
		}
		for _, got := range gotTasks {
			if !slices.Equal(got, tasks) || !slices.IsSorted(got) {
				t.Fatalf("custom function got tasks %v, want %v ascending", got, tasks)
			}
		}
	})
	t.Run("custom choosing a foreign task is an error", func(t *testing.T) {
		bad := &target{bolt: "custom", grouping: topology.Custom, tasks: []int{3, 4},
			custom: func([]any, []int) []int { return []int{4, 99} }}
		if _, err := bad.choose(nil, nil); err == nil || !strings.Contains(err.Error(), "task 99") {
			t.Errorf("choose = %v, want an error naming task 99", err)
		}
	})
}

func TestBuildRoutesErrors(t *testing.T) {
	top := routeTopology(t, func([]any, []int) []int { return nil })
	layout := twoContainerLayout(top)
	streams := wire.NewStreamTable(top.Logical)
	rng := rand.New(rand.NewPCG(1, 1))

	if _, err := buildRoutes(top, streams, layout, "ghost", 1, rng, nil); err == nil || !strings.Contains(err.Error(), `"ghost"`) {
		t.Errorf("unknown component: %v", err)
	}

	noCustom := *top
	noCustom.CustomGroupings = map[string]api.CustomGroupingFunc{}
	if _, err := buildRoutes(&noCustom, streams, layout, "src", 1, rng, nil); err == nil || !strings.Contains(err.Error(), `custom grouping "pick" is not registered`) {
		t.Errorf("missing custom grouping: %v", err)
	}

	partial := *layout
	partial.Tasks = map[string][]int{}
	for k, v := range layout.Tasks {
		partial.Tasks[k] = v
	}
	delete(partial.Tasks, "all")
	if _, err := buildRoutes(top, streams, &partial, "src", 1, rng, nil); err == nil || !strings.Contains(err.Error(), `bolt "all" has no tasks`) {
		t.Errorf("bolt without tasks: %v", err)
	}
}

func sortedKeys(m map[int]int) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// BenchmarkChooseFields measures the fields grouping's choice of a task:
// the key's hash and its task.
func BenchmarkChooseFields(b *testing.B) {
	top := routeTopology(b, func([]any, []int) []int { return nil })
	tg := targetFor(b, routesOf(b, top, twoContainerLayout(top), "src")["default"], "fields")
	vals := make([][]any, 256)
	for i := range vals {
		vals[i] = keyed(i)
	}
	dst := make([]int, 0, 1)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		var err error
		if dst, err = tg.choose(vals[i&255], dst[:0]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
