package inproc

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/tuple"
)

// groupingCase is one routing behaviour, checked against any runner.
type groupingCase struct {
	name string
	n    int // tuples the spout emits
	// until, when set, must also hold before the run stops.
	until func(r *recorder) bool
	build func(h *harness, b *api.TopologyBuilder)
	check func(t *testing.T, h *harness, res runResult)
}

// groupingCases are the routing behaviours every runtime must have.
var groupingCases = []groupingCase{
	{
		name: "fields",
		n:    2000, // every key twice
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(nil), 1)
			b.SetBolt("fields", h.bolt("fields", boltOptions{}), 4).FieldsGrouping("src", "key")
		},
		check: func(t *testing.T, h *harness, res runResult) {
			got := h.tuples("fields")
			assertCount(t, "tuples received", len(got), h.n)
			tasks := h.tasksOf(t, "fields")
			taskOfKey := map[string]int{}
			for _, r := range got {
				k := r.values[0].(string)
				if prev, ok := taskOfKey[k]; ok && prev != r.task {
					t.Fatalf("key %q reached tasks %d and %d", k, prev, r.task)
				}
				taskOfKey[k] = r.task
				// The task follows the documented, stable hash.
				hash, err := tuple.HashValues(nil, k)
				if err != nil {
					t.Fatal(err)
				}
				if want := tasks[tuple.TaskIndex(hash, len(tasks))]; r.task != want {
					t.Fatalf("key %q reached task %d, the fields hash says %d", k, r.task, want)
				}
			}
			assertCount(t, "distinct keys", len(taskOfKey), 1000)
			counts := perTask(got)
			for _, task := range tasks {
				if counts[task] == 0 {
					t.Errorf("task %d got no key; counts %v", task, counts)
				}
			}
		},
	},
	{
		name: "shuffle",
		n:    1000,
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(nil), 1)
			b.SetBolt("shuffle", h.bolt("shuffle", boltOptions{}), 4).ShuffleGrouping("src")
		},
		check: func(t *testing.T, h *harness, res runResult) {
			assertEven(t, h, "shuffle")
		},
	},
	{
		name: "none behaves like shuffle",
		n:    1000,
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(nil), 1)
			b.SetBolt("none", h.bolt("none", boltOptions{}), 4).NoneGrouping("src")
		},
		check: func(t *testing.T, h *harness, res runResult) {
			assertEven(t, h, "none")
		},
	},
	{
		name: "local-or-shuffle in one container spreads over all tasks",
		n:    1000,
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(nil), 1)
			b.SetBolt("local", h.bolt("local", boltOptions{}), 4).LocalOrShuffleGrouping("src")
		},
		check: func(t *testing.T, h *harness, res runResult) {
			assertEven(t, h, "local")
		},
	},
	{
		name: "all",
		n:    300,
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(nil), 1)
			b.SetBolt("all", h.bolt("all", boltOptions{}), 3).AllGrouping("src")
		},
		check: func(t *testing.T, h *harness, res runResult) {
			got := h.tuples("all")
			tasks := h.tasksOf(t, "all")
			assertCount(t, "tuples received", len(got), h.n*len(tasks))
			seen := map[int]map[int]bool{} // task → n values
			for _, r := range got {
				if seen[r.task] == nil {
					seen[r.task] = map[int]bool{}
				}
				seen[r.task][r.values[1].(int)] = true
			}
			for _, task := range tasks {
				if len(seen[task]) != h.n {
					t.Errorf("task %d received %d distinct tuples, want all %d", task, len(seen[task]), h.n)
				}
			}
		},
	},
	{
		name: "global",
		n:    300,
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(nil), 1)
			b.SetBolt("global", h.bolt("global", boltOptions{}), 3).GlobalGrouping("src")
		},
		check: func(t *testing.T, h *harness, res runResult) {
			got := h.tuples("global")
			assertCount(t, "tuples received", len(got), h.n)
			lowest := slices.Min(h.tasksOf(t, "global"))
			if counts := perTask(got); len(counts) != 1 || counts[lowest] != h.n {
				t.Errorf("per task %v, want all %d at the lowest task %d", counts, h.n, lowest)
			}
		},
	},
	{
		name: "direct",
		n:    300,
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(func(ctx api.Context, out api.SpoutCollector, i int) {
				tasks := ctx.ComponentTasks("direct")
				switch i % 10 {
				case 3: // not a direct emit: dropped and counted
					out.EmitStream("d", api.Values{key(i), i, -1}, nil)
				case 7: // a task that does not subscribe: dropped and counted
					out.EmitDirect(ctx.TaskID(), "d", api.Values{key(i), i, ctx.TaskID()}, nil)
				default:
					to := tasks[(i/10)%len(tasks)]
					out.EmitDirect(to, "d", api.Values{key(i), i, to}, nil)
				}
			}), 1)
			b.SetBolt("direct", h.bolt("direct", boltOptions{}), 3).DirectGrouping("src", "d")
		},
		check: func(t *testing.T, h *harness, res runResult) {
			got := h.tuples("direct")
			assertCount(t, "tuples received", len(got), h.n*8/10)
			for _, r := range got {
				if to := r.values[2].(int); r.task != to {
					t.Fatalf("tuple %v sent to task %d reached task %d", r.values, to, r.task)
				}
				if r.stream != "d" {
					t.Fatalf("stream %q, want d", r.stream)
				}
			}
			if counts := perTask(got); len(counts) != 3 {
				t.Errorf("direct emits reached %d of 3 tasks: %v", len(counts), counts)
			}
			src := res["src"]
			assertCount(t, "spout dropped", int(src.Dropped), h.n*2/10)
			assertCount(t, "spout errors", int(src.Errors), h.n*2/10)
		},
	},
	{
		name: "custom",
		n:    500,
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(nil), 1)
			b.SetBolt("custom", h.bolt("custom", boltOptions{}), 4).CustomGrouping("src", "pick",
				func(values []any, tasks []int) []int {
					h.rec.update(func() { h.rec.custom = append(h.rec.custom, slices.Clone(tasks)) })
					switch n := values[1].(int); n % 5 {
					case 0:
						return nil // nowhere
					case 1:
						return []int{tasks[0], tasks[len(tasks)-1]}
					case 2:
						return []int{1 << 20} // not one of the tasks: dropped and counted
					default:
						return []int{tasks[n%len(tasks)]}
					}
				})
		},
		check: func(t *testing.T, h *harness, res runResult) {
			tasks := h.tasksOf(t, "custom")
			h.rec.mu.Lock()
			calls := slices.Clone(h.rec.custom)
			h.rec.mu.Unlock()
			assertCount(t, "custom function calls", len(calls), h.n)
			for _, got := range calls {
				if !slices.Equal(got, tasks) {
					t.Fatalf("custom function received tasks %v, want ComponentTasks %v", got, tasks)
				}
			}
			if !slices.IsSorted(tasks) {
				t.Errorf("ComponentTasks %v not ascending", tasks)
			}
			got := h.tuples("custom")
			assertCount(t, "tuples received", len(got), h.n/5*2+h.n/5*2)
			for _, r := range got {
				n := r.values[1].(int)
				var want []int
				switch n % 5 {
				case 1:
					want = []int{tasks[0], tasks[len(tasks)-1]}
				case 3, 4:
					want = []int{tasks[n%len(tasks)]}
				default:
					t.Fatalf("tuple %d should not have been delivered", n)
				}
				if !slices.Contains(want, r.task) {
					t.Fatalf("tuple %d reached task %d, the function chose %v", n, r.task, want)
				}
			}
			assertCount(t, "spout dropped", int(res["src"].Dropped), h.n/5)
			assertCount(t, "spout errors", int(res["src"].Errors), h.n/5)
		},
	},
	{
		name: "named streams",
		n:    400,
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(func(_ api.Context, out api.SpoutCollector, i int) {
				stream := "even"
				if i%2 == 1 {
					stream = "odd"
				}
				out.EmitStream(stream, api.Values{key(i), i}, nil)
			}), 1)
			b.SetBolt("odds", h.bolt("odds", boltOptions{}), 2).Input("src", "odd", api.Shuffle())
			b.SetBolt("evens", h.bolt("evens", boltOptions{}), 2).Input("src", "even", api.Fields("key"))
			b.SetBolt("both", h.bolt("both", boltOptions{}), 1).
				Input("src", "odd", api.Global()).Input("src", "even", api.All())
			b.SetBolt("unused", h.bolt("unused", boltOptions{}), 1).ShuffleGrouping("src")
		},
		check: func(t *testing.T, h *harness, res runResult) {
			for bolt, parity := range map[string]int{"odds": 1, "evens": 0} {
				got := h.tuples(bolt)
				assertCount(t, bolt+" received", len(got), h.n/2)
				for _, r := range got {
					if r.values[1].(int)%2 != parity || r.stream != map[int]string{0: "even", 1: "odd"}[parity] || r.source != "src" {
						t.Fatalf("%s received %+v", bolt, r)
					}
				}
			}
			both := h.tuples("both")
			assertCount(t, "both received", len(both), h.n)
			for _, r := range both {
				if want := map[bool]string{true: "odd", false: "even"}[r.values[1].(int)%2 == 1]; r.stream != want {
					t.Fatalf("both: tuple %v on stream %q, want %q", r.values, r.stream, want)
				}
			}
			assertCount(t, "unused received", len(h.tuples("unused")), 0)
		},
	},
	{
		name: "tick tuples",
		n:    50,
		until: func(r *recorder) bool {
			ticks := 0
			for _, g := range r.got {
				if g.tick {
					ticks++
				}
			}
			return ticks >= 3
		},
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(nil), 1)
			b.SetBolt("ticked", h.bolt("ticked", boltOptions{}), 1).ShuffleGrouping("src").
				SetTickFrequency(10 * time.Millisecond)
		},
		check: func(t *testing.T, h *harness, res runResult) {
			ticks := h.ticks("ticked")
			if len(ticks) < 3 {
				t.Errorf("%d ticks, want at least 3", len(ticks))
			}
			for _, r := range ticks {
				if r.source != api.SystemComponent || r.stream != api.TickStream || len(r.values) != 0 {
					t.Errorf("tick tuple %+v", r)
				}
			}
			assertCount(t, "data tuples", len(h.tuples("ticked")), h.n)
		},
	},
	{
		name: "a panicking bolt is counted and keeps running",
		n:    200,
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(nil), 1)
			b.SetBolt("panicky", h.bolt("panicky", boltOptions{panicOdd: true, forward: true}), 2).ShuffleGrouping("src")
			b.SetBolt("after", h.bolt("after", boltOptions{}), 1).ShuffleGrouping("panicky")
		},
		check: func(t *testing.T, h *harness, res runResult) {
			assertCount(t, "panicky received", len(h.tuples("panicky")), h.n)
			assertCount(t, "panicky executed", int(res["panicky"].Executed), h.n)
			assertCount(t, "panicky errors", int(res["panicky"].Errors), h.n/2)
			// It emits before panicking, so everything reaches the next bolt.
			assertCount(t, "after received", len(h.tuples("after")), h.n)
		},
	},
	{
		name: "bad emits are dropped and counted",
		n:    400,
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(func(_ api.Context, out api.SpoutCollector, i int) {
				switch i % 4 {
				case 1: // wrong number of values
					out.Emit(api.Values{key(i)}, nil)
				case 2: // undeclared stream
					out.EmitStream("nope", api.Values{key(i), i}, nil)
				case 3: // a value type without a codec
					out.Emit(api.Values{key(i), struct{ X int }{i}}, nil)
				default:
					out.Emit(api.Values{key(i), i}, nil)
				}
			}), 1)
			b.SetBolt("sink", h.bolt("sink", boltOptions{}), 2).FieldsGrouping("src", "key")
		},
		check: func(t *testing.T, h *harness, res runResult) {
			got := h.tuples("sink")
			assertCount(t, "tuples received", len(got), h.n/4)
			for _, r := range got {
				if r.values[1].(int)%4 != 0 {
					t.Fatalf("bad tuple delivered: %v", r.values)
				}
			}
			assertCount(t, "spout emitted", int(res["src"].Emitted), h.n)
			assertCount(t, "spout dropped", int(res["src"].Dropped), h.n*3/4)
			assertCount(t, "spout errors", int(res["src"].Errors), h.n*3/4)
		},
	},
	{
		name: "tuples are conserved over two hops",
		n:    3000,
		build: func(h *harness, b *api.TopologyBuilder) {
			b.SetSpout("src", h.spout(nil), 1)
			b.SetBolt("first", h.bolt("first", boltOptions{forward: true}), 3).ShuffleGrouping("src")
			b.SetBolt("second", h.bolt("second", boltOptions{}), 2).FieldsGrouping("first", "key")
		},
		check: func(t *testing.T, h *harness, res runResult) {
			assertCount(t, "spout emitted", int(res["src"].Emitted), h.n)
			assertCount(t, "first executed", int(res["first"].Executed), h.n)
			assertCount(t, "first emitted", int(res["first"].Emitted), h.n)
			assertCount(t, "second executed", int(res["second"].Executed), h.n)
			seen := map[int]bool{}
			for _, r := range h.tuples("second") {
				if seen[r.values[1].(int)] {
					t.Fatalf("tuple %v delivered twice", r.values)
				}
				seen[r.values[1].(int)] = true
			}
			assertCount(t, "distinct tuples at the end", len(seen), h.n)
			for name, c := range res {
				if c.Errors != 0 || c.Dropped != 0 {
					t.Errorf("%s: %d errors, %d dropped", name, c.Errors, c.Dropped)
				}
			}
		},
	},
}

// runGroupingCase runs one case with runner and checks it.
func runGroupingCase(t *testing.T, runner topologyRunner, tc groupingCase) {
	t.Helper()
	h, res := runCase(t, runner, tc.n, tc.until, tc.build)
	tc.check(t, h, res)
}

func TestGroupings(t *testing.T) {
	for _, tc := range groupingCases {
		t.Run(tc.name, func(t *testing.T) {
			runGroupingCase(t, inprocRunner, tc)
		})
	}
}

func assertCount(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}

// assertEven checks that bolt received every tuple once and that each of
// its tasks got within 50% of the mean.
func assertEven(t *testing.T, h *harness, bolt string) {
	t.Helper()
	got := h.tuples(bolt)
	assertCount(t, "tuples received", len(got), h.n)
	tasks := h.tasksOf(t, bolt)
	counts := perTask(got)
	mean := float64(h.n) / float64(len(tasks))
	for _, task := range tasks {
		if c := float64(counts[task]); c < mean/2 || c > mean*1.5 {
			t.Errorf("task %d got %v tuples, mean %v; counts %v", task, c, mean, counts)
		}
	}
	if len(counts) != len(tasks) {
		t.Errorf("tuples reached tasks %v, bolt has %v", counts, tasks)
	}
	var ns []int
	for _, r := range got {
		ns = append(ns, r.values[1].(int))
	}
	slices.Sort(ns)
	for i, n := range ns {
		if n != i {
			t.Fatalf("received tuple numbers are not exactly 0..%d (at %d: %d)", h.n-1, i, n)
		}
	}
}

// TestHarnessNames guards the case names: they become subtest names
// shared with the cluster runner.
func TestHarnessNames(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range groupingCases {
		if seen[tc.name] || strings.TrimSpace(tc.name) == "" {
			t.Errorf("case name %q empty or repeated", tc.name)
		}
		seen[tc.name] = true
	}
}
