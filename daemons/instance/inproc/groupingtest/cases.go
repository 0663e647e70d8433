package groupingtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/tuple"
)

// Case is one routing behaviour, checked the same way against any runtime.
type Case struct {
	// Name identifies the case: a subtest name, a flag value and part of
	// the topology name.
	Name string
	// N is the number of emission steps of the spout.
	N int

	emit  emitFunc
	bolts func(b *api.TopologyBuilder, c *components)
	until func(r *Result) bool
	check func(t TB, c *Case, r *Result)
}

// Cases returns every case, in a fixed order.
func Cases() []*Case { return slices.Clone(cases) }

// Names returns the names of every case.
func Names() []string {
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.Name
	}
	return names
}

// Lookup returns the case with the given name.
func Lookup(name string) (*Case, error) {
	for _, c := range cases {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("unknown grouping case %q (cases: %s)", name, strings.Join(Names(), ", "))
}

// cases are the routing behaviours every runtime must have. Bolt names are
// unique across cases (see AllBuilder).
var cases = []*Case{
	{
		Name: "fields",
		N:    2000, // every key twice
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("fields", c.bolt("fields", boltOptions{}), 4).FieldsGrouping(Spout, "key")
		},
		check: func(t TB, c *Case, r *Result) {
			got := r.Tuples("fields")
			assertCount(t, "tuples received", len(got), c.N)
			tasks := r.Tasks(t, "fields")
			taskOfKey := map[string]int{}
			for _, rec := range got {
				if prev, ok := taskOfKey[rec.Key]; ok && prev != rec.Task {
					t.Fatalf("key %q reached tasks %d and %d", rec.Key, prev, rec.Task)
				}
				taskOfKey[rec.Key] = rec.Task
				// The task follows the documented, stable hash.
				hash, err := tuple.HashValues(nil, rec.Key)
				if err != nil {
					t.Fatalf("hash %q: %v", rec.Key, err)
				}
				if want := tasks[keygroup.TaskIndex(hash, len(tasks), keygroup.DefaultMaxParallelism)]; rec.Task != want {
					t.Fatalf("key %q reached task %d, the fields hash says %d", rec.Key, rec.Task, want)
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
		Name: "shuffle",
		N:    1000,
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("shuffle", c.bolt("shuffle", boltOptions{}), 4).ShuffleGrouping(Spout)
		},
		check: func(t TB, c *Case, r *Result) {
			assertSpread(t, r, "shuffle", r.Tasks(t, "shuffle"), c.N)
		},
	},
	{
		Name: "none",
		N:    1000,
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("none", c.bolt("none", boltOptions{}), 4).NoneGrouping(Spout)
		},
		check: func(t TB, c *Case, r *Result) { // behaves like shuffle
			assertSpread(t, r, "none", r.Tasks(t, "none"), c.N)
		},
	},
	{
		// Every tuple stays in the emitter's container when the bolt has a
		// task there, spread over those tasks; otherwise it is spread over
		// all tasks. In one container that means all tasks.
		Name: "local-or-shuffle",
		N:    1000,
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("local", c.bolt("local", boltOptions{}), 4).LocalOrShuffleGrouping(Spout)
		},
		check: func(t TB, c *Case, r *Result) {
			tasks := r.Tasks(t, "local")
			spout := r.Tasks(t, Spout)
			assertCount(t, "spout tasks", len(spout), 1)
			from := r.containerOf(spout[0])
			var local []int
			for _, task := range tasks {
				if r.containerOf(task) == from {
					local = append(local, task)
				}
			}
			want := tasks
			if len(local) > 0 {
				want = local
			}
			for _, rec := range r.Tuples("local") {
				if rec.SourceTask != spout[0] {
					t.Fatalf("tuple %d came from task %d, not the spout's task %d", rec.N, rec.SourceTask, spout[0])
				}
				if !slices.Contains(want, rec.Task) {
					t.Fatalf("tuple %d from container %d reached task %d in container %d; the bolt's tasks there are %v",
						rec.N, from, rec.Task, r.containerOf(rec.Task), local)
				}
			}
			assertSpread(t, r, "local", want, c.N)
		},
	},
	{
		Name: "all",
		N:    300,
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("all", c.bolt("all", boltOptions{}), 3).AllGrouping(Spout)
		},
		check: func(t TB, c *Case, r *Result) {
			got := r.Tuples("all")
			tasks := r.Tasks(t, "all")
			assertCount(t, "tuples received", len(got), c.N*len(tasks))
			seen := map[int]map[int]bool{} // task → n values
			for _, rec := range got {
				if seen[rec.Task] == nil {
					seen[rec.Task] = map[int]bool{}
				}
				seen[rec.Task][rec.N] = true
			}
			for _, task := range tasks {
				if len(seen[task]) != c.N {
					t.Errorf("task %d received %d distinct tuples, want all %d", task, len(seen[task]), c.N)
				}
			}
		},
	},
	{
		Name: "global",
		N:    300,
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("global", c.bolt("global", boltOptions{}), 3).GlobalGrouping(Spout)
		},
		check: func(t TB, c *Case, r *Result) {
			got := r.Tuples("global")
			assertCount(t, "tuples received", len(got), c.N)
			lowest := slices.Min(r.Tasks(t, "global"))
			if counts := perTask(got); len(counts) != 1 || counts[lowest] != c.N {
				t.Errorf("per task %v, want all %d at the lowest task %d", counts, c.N, lowest)
			}
		},
	},
	{
		Name: "direct",
		N:    300,
		emit: func(ctx api.Context, out api.SpoutCollector, i int) {
			tasks := ctx.ComponentTasks("direct")
			switch i % 10 {
			case 3: // not a direct emit: dropped and counted
				out.EmitStream("d", api.Values{Key(i), i, -1}, nil)
			case 7: // a task that does not subscribe: dropped and counted
				out.EmitDirect(ctx.TaskID(), "d", api.Values{Key(i), i, ctx.TaskID()}, nil)
			default:
				to := tasks[(i/10)%len(tasks)]
				out.EmitDirect(to, "d", api.Values{Key(i), i, to}, nil)
			}
		},
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("direct", c.bolt("direct", boltOptions{}), 3).DirectGrouping(Spout, "d")
		},
		check: func(t TB, c *Case, r *Result) {
			got := r.Tuples("direct")
			assertCount(t, "tuples received", len(got), c.N*8/10)
			for _, rec := range got {
				if rec.Task != rec.To {
					t.Fatalf("tuple %d sent to task %d reached task %d", rec.N, rec.To, rec.Task)
				}
				if rec.Stream != "d" {
					t.Fatalf("stream %q, want d", rec.Stream)
				}
			}
			if counts := perTask(got); len(counts) != 3 {
				t.Errorf("direct emits reached %d of 3 tasks: %v", len(counts), counts)
			}
			src := r.Counters[Spout]
			assertCount(t, "spout dropped", int(src.Dropped), c.N*2/10)
			assertCount(t, "spout errors", int(src.Errors), c.N*2/10)
		},
	},
	{
		Name: "custom",
		N:    500,
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("custom", c.bolt("custom", boltOptions{}), 4).CustomGrouping(Spout, CustomGroupingName, c.custom)
		},
		check: func(t TB, c *Case, r *Result) {
			tasks := r.Tasks(t, "custom")
			calls := r.CustomCalls()
			assertCount(t, "custom function calls", len(calls), c.N)
			for _, got := range calls {
				if !slices.Equal(got, tasks) {
					t.Fatalf("custom function received tasks %v, want ComponentTasks %v", got, tasks)
				}
			}
			if !slices.IsSorted(tasks) {
				t.Errorf("ComponentTasks %v not ascending", tasks)
			}
			got := r.Tuples("custom")
			assertCount(t, "tuples received", len(got), c.N/5*2+c.N/5*2)
			for _, rec := range got {
				var want []int
				switch rec.N % 5 {
				case 1:
					want = []int{tasks[0], tasks[len(tasks)-1]}
				case 3, 4:
					want = []int{tasks[rec.N%len(tasks)]}
				default:
					t.Fatalf("tuple %d should not have been delivered", rec.N)
				}
				if !slices.Contains(want, rec.Task) {
					t.Fatalf("tuple %d reached task %d, the function chose %v", rec.N, rec.Task, want)
				}
			}
			// The invalid task (n%5 == 2) is dropped and counted.
			assertCount(t, "spout dropped", int(r.Counters[Spout].Dropped), c.N/5)
			assertCount(t, "spout errors", int(r.Counters[Spout].Errors), c.N/5)
		},
	},
	{
		Name: "named-streams",
		N:    400,
		emit: func(_ api.Context, out api.SpoutCollector, i int) {
			stream := "even"
			if i%2 == 1 {
				stream = "odd"
			}
			out.EmitStream(stream, api.Values{Key(i), i}, nil)
		},
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("odds", c.bolt("odds", boltOptions{}), 2).Input(Spout, "odd", api.Shuffle())
			b.SetBolt("evens", c.bolt("evens", boltOptions{}), 2).Input(Spout, "even", api.Fields("key"))
			b.SetBolt("both", c.bolt("both", boltOptions{}), 1).
				Input(Spout, "odd", api.Global()).Input(Spout, "even", api.All())
			b.SetBolt("unused", c.bolt("unused", boltOptions{}), 1).ShuffleGrouping(Spout)
		},
		check: func(t TB, c *Case, r *Result) {
			for _, bolt := range []string{"odds", "evens"} {
				parity, stream := 1, "odd"
				if bolt == "evens" {
					parity, stream = 0, "even"
				}
				got := r.Tuples(bolt)
				assertCount(t, bolt+" received", len(got), c.N/2)
				for _, rec := range got {
					if rec.N%2 != parity || rec.Stream != stream || rec.Source != Spout {
						t.Fatalf("%s received %+v", bolt, rec)
					}
				}
			}
			both := r.Tuples("both")
			assertCount(t, "both received", len(both), c.N)
			for _, rec := range both {
				want := "even"
				if rec.N%2 == 1 {
					want = "odd"
				}
				if rec.Stream != want {
					t.Fatalf("both: tuple %d on stream %q, want %q", rec.N, rec.Stream, want)
				}
			}
			assertCount(t, "unused received", len(r.Tuples("unused")), 0)
		},
	},
	{
		Name:  "tick-tuples",
		N:     50,
		until: func(r *Result) bool { return len(r.Ticks("ticked")) >= 3 },
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("ticked", c.bolt("ticked", boltOptions{}), 1).ShuffleGrouping(Spout).
				SetTickFrequency(10 * time.Millisecond)
		},
		check: func(t TB, c *Case, r *Result) {
			ticks := r.Ticks("ticked")
			if len(ticks) < 3 {
				t.Errorf("%d ticks, want at least 3", len(ticks))
			}
			for _, rec := range ticks {
				if rec.Source != api.SystemComponent || rec.Stream != api.TickStream || rec.Arity != 0 {
					t.Errorf("tick tuple %+v", rec)
				}
			}
			assertCount(t, "data tuples", len(r.Tuples("ticked")), c.N)
		},
	},
	{
		Name: "panicking-bolt",
		N:    200,
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("panicky", c.bolt("panicky", boltOptions{panicOdd: true, forward: true}), 2).ShuffleGrouping(Spout)
			b.SetBolt("after", c.bolt("after", boltOptions{}), 1).ShuffleGrouping("panicky")
		},
		check: func(t TB, c *Case, r *Result) { // counted, and the bolt keeps running
			assertCount(t, "panicky received", len(r.Tuples("panicky")), c.N)
			assertCount(t, "panicky executed", int(r.Counters["panicky"].Executed), c.N)
			assertCount(t, "panicky errors", int(r.Counters["panicky"].Errors), c.N/2)
			// It emits before panicking, so everything reaches the next bolt.
			assertCount(t, "after received", len(r.Tuples("after")), c.N)
		},
	},
	{
		Name: "bad-emits",
		N:    400,
		emit: func(_ api.Context, out api.SpoutCollector, i int) {
			switch i % 4 {
			case 1: // wrong number of values
				out.Emit(api.Values{Key(i)}, nil)
			case 2: // undeclared stream
				out.EmitStream("nope", api.Values{Key(i), i}, nil)
			case 3: // a value type without a codec
				out.Emit(api.Values{Key(i), struct{ X int }{i}}, nil)
			default:
				out.Emit(api.Values{Key(i), i}, nil)
			}
		},
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("sink", c.bolt("sink", boltOptions{}), 2).FieldsGrouping(Spout, "key")
		},
		check: func(t TB, c *Case, r *Result) { // dropped and counted
			got := r.Tuples("sink")
			assertCount(t, "tuples received", len(got), c.N/4)
			for _, rec := range got {
				if rec.N%4 != 0 || rec.Arity != 2 || rec.Values != "" {
					t.Fatalf("bad tuple delivered: %+v", rec)
				}
			}
			src := r.Counters[Spout]
			assertCount(t, "spout emitted", int(src.Emitted), c.N)
			assertCount(t, "spout dropped", int(src.Dropped), c.N*3/4)
			assertCount(t, "spout errors", int(src.Errors), c.N*3/4)
		},
	},
	{
		Name: "two-hops",
		N:    3000,
		bolts: func(b *api.TopologyBuilder, c *components) {
			b.SetBolt("first", c.bolt("first", boltOptions{forward: true}), 3).ShuffleGrouping(Spout)
			b.SetBolt("second", c.bolt("second", boltOptions{}), 2).FieldsGrouping("first", "key")
		},
		check: func(t TB, c *Case, r *Result) { // tuples are conserved
			assertCount(t, "spout emitted", int(r.Counters[Spout].Emitted), c.N)
			assertCount(t, "first executed", int(r.Counters["first"].Executed), c.N)
			assertCount(t, "first emitted", int(r.Counters["first"].Emitted), c.N)
			assertCount(t, "second executed", int(r.Counters["second"].Executed), c.N)
			assertSpread(t, r, "first", r.Tasks(t, "first"), c.N)
			seen := map[int]bool{}
			for _, rec := range r.Tuples("second") {
				if seen[rec.N] {
					t.Fatalf("tuple %d delivered twice", rec.N)
				}
				seen[rec.N] = true
			}
			assertCount(t, "distinct tuples at the end", len(seen), c.N)
			for _, name := range []string{Spout, "first", "second"} {
				if cs := r.Counters[name]; cs.Errors != 0 || cs.Dropped != 0 {
					t.Errorf("%s: %d errors, %d dropped", name, cs.Errors, cs.Dropped)
				}
			}
		},
	},
}

func assertCount(t TB, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}

// perTask counts records per task.
func perTask(rs []Record) map[int]int {
	out := map[int]int{}
	for _, r := range rs {
		out[r.Task]++
	}
	return out
}

// assertSpread checks that bolt received the tuples 0..n-1 once each, all
// at the tasks want, each of which got within 50% of the mean.
func assertSpread(t TB, r *Result, bolt string, want []int, n int) {
	t.Helper()
	got := r.Tuples(bolt)
	assertCount(t, "tuples received", len(got), n)
	counts := perTask(got)
	mean := float64(n) / float64(len(want))
	for _, task := range want {
		if c := float64(counts[task]); c < mean/2 || c > mean*1.5 {
			t.Errorf("task %d got %v tuples, mean %v; counts %v", task, c, mean, counts)
		}
	}
	for task := range counts {
		if !slices.Contains(want, task) {
			t.Errorf("tuples reached task %d, want only tasks %v; counts %v", task, want, counts)
		}
	}
	ns := make([]int, 0, len(got))
	for _, rec := range got {
		ns = append(ns, rec.N)
	}
	slices.Sort(ns)
	for i, v := range ns {
		if v != i {
			t.Fatalf("received tuple numbers are not exactly 0..%d (at %d: %d)", n-1, i, v)
		}
	}
}
