package streamlet_test

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/streamlet"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/daemons/instance/inproc"
)

// run runs the compiled pipeline in process until done is closed (or 30s).
func run(t *testing.T, b *streamlet.Builder, done <-chan struct{}) *inproc.Summary {
	t.Helper()
	tb, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := inproc.New(topo, inproc.Options{DrainTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	go func() {
		select {
		case <-done:
		case <-timeout.C:
			t.Error("timed out waiting for the pipeline's results")
		}
		cancel()
	}()
	s, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func components(t *testing.T, b *streamlet.Builder) []string {
	t.Helper()
	tb, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range topo.Logical.Components {
		names = append(names, fmt.Sprintf("%s×%d", c.Name, c.Parallelism))
	}
	sort.Strings(names)
	return names
}

func chainPipeline(fuse bool) *streamlet.Builder {
	b := streamlet.New("chain")
	if !fuse {
		b.DisableFusing()
	}
	src := streamlet.Slice(b, "numbers", func(int) []int64 { return []int64{1, 2, 3} }).Parallelism(2)
	even := streamlet.Filter(src, func(v int64) bool { return v%2 == 0 }).Named("even")
	sq := streamlet.Map(even, func(v int64) int64 { return v * v }).Named("square")
	keyed := streamlet.KeyBy(sq, func(v int64) int64 { return v }).Parallelism(2)
	w := streamlet.ReduceByKeyAndWindow(keyed, streamlet.WindowConfig{Assigner: window.TumblingCount(1)}, nil, window.Sum[int64]()).Named("sum")
	streamlet.Consume(w, func(streamlet.Windowed[int64, int64]) {})
	return b
}

func TestCompileFusesAdjacentStages(t *testing.T) {
	got := components(t, chainPipeline(true))
	want := []string{"consume-6×1", "numbers_even_square_keyby-4×2", "sum×1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("fused components %v, want %v", got, want)
	}
	got = components(t, chainPipeline(false))
	want = []string{"consume-6×1", "even×2", "keyby-4×2", "numbers×2", "square×2", "sum×1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("unfused components %v, want %v", got, want)
	}
}

func TestCompileReportsProblems(t *testing.T) {
	b := streamlet.New("bad")
	src := streamlet.Slice(b, "s", func(int) []string { return nil }).Parallelism(0)
	streamlet.ReduceByKeyAndWindow(streamlet.KeyBy(src, func(s string) string { return s }),
		streamlet.WindowConfig{Assigner: window.Sliding(time.Second, 2*time.Second)}, nil, window.Count[string]())
	_, err := b.Compile()
	if err == nil {
		t.Fatal("Compile accepted a bad pipeline")
	}
	for _, want := range []string{"parallelism 0", "slide must not exceed size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
}

// collector gathers results across tasks until want of them arrived.
type collector[T any] struct {
	mu   sync.Mutex
	got  []T
	want int
	done chan struct{}
}

func newCollector[T any](want int) *collector[T] {
	return &collector[T]{want: want, done: make(chan struct{})}
}

func (c *collector[T]) add(v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, v)
	if len(c.got) == c.want {
		close(c.done)
	}
}

func (c *collector[T]) all() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]T(nil), c.got...)
}

func TestWordCountByCountWindow(t *testing.T) {
	sentences := []string{"a b c", "a b", "a"}
	b := streamlet.New("wc")
	lines := streamlet.Slice(b, "lines", func(int) []string {
		var out []string
		for i := 0; i < 100; i++ {
			out = append(out, sentences...)
		}
		return out
	}).Parallelism(2)
	words := streamlet.FlatMap(lines, strings.Fields).Named("split")
	keyed := streamlet.KeyBy(words, func(w string) string { return w }).Parallelism(3)
	counts := streamlet.ReduceByKeyAndWindow(keyed, streamlet.WindowConfig{Assigner: window.TumblingCount(50)}, nil, window.Count[string]()).Parallelism(2)
	// a: 600 words → 12 windows; b: 400 → 8; c: 200 → 4.
	col := newCollector[streamlet.Windowed[string, int64]](24)
	streamlet.Consume(counts, col.add)
	run(t, b, col.done)
	per := map[string]int64{}
	for _, r := range col.all() {
		if r.Value != 50 || r.Firing != window.Final {
			t.Errorf("result %+v: want a final count of 50", r)
		}
		per[r.Key] += r.Value
	}
	if want := map[string]int64{"a": 600, "b": 400, "c": 200}; !maps.Equal(per, want) {
		t.Errorf("counts %v, want %v", per, want)
	}
}

// Click and Buy are user types: they cross processes with JSONCodec.
type Click struct {
	User string
	At   int64
}

type Buy struct {
	User  string
	At    int64
	Price int64
}

func TestJoinKinds(t *testing.T) {
	clicks := []Click{{"ann", 1_000}, {"ann", 1_500}, {"bob", 1_200}, {"cid", 2_100}, {"end", 9_000}}
	buys := []Buy{{"ann", 1_700, 5}, {"dan", 1_100, 7}, {"cid", 1_900, 3}, {"end", 9_000, 0}}
	cases := map[streamlet.JoinType][]string{
		streamlet.Inner:     {"ann 1000 5", "ann 1500 5"},
		streamlet.Left:      {"ann 1000 5", "ann 1500 5", "bob 1200 -", "cid 2100 -"},
		streamlet.Right:     {"ann 1000 5", "ann 1500 5", "cid - 3", "dan - 7"},
		streamlet.FullOuter: {"ann 1000 5", "ann 1500 5", "bob 1200 -", "cid - 3", "cid 2100 -", "dan - 7"},
	}
	for kind, want := range cases {
		t.Run(fmt.Sprint(kind), func(t *testing.T) {
			b := streamlet.New("join")
			b.RegisterType(1, Click{}, streamlet.JSONCodec[Click]{}).RegisterType(2, Buy{}, streamlet.JSONCodec[Buy]{})
			c := streamlet.KeyBy(streamlet.Slice(b, "clicks", func(int) []Click { return clicks }), func(c Click) string { return c.User })
			bu := streamlet.KeyBy(streamlet.Slice(b, "buys", func(int) []Buy { return buys }), func(b Buy) string { return b.User })
			joined := streamlet.Join(c, bu, kind, streamlet.WindowConfig{
				Assigner: window.Tumbling(time.Second),
				Time:     window.EventTime,
				MaxDelay: time.Second,
			}, func(c Click) time.Time { return time.UnixMilli(c.At) }, func(b Buy) time.Time { return time.UnixMilli(b.At) },
				func(user string, c *Click, b *Buy) string {
					cs, bs := "-", "-"
					if c != nil {
						cs = fmt.Sprint(c.At)
					}
					if b != nil {
						bs = fmt.Sprint(b.Price)
					}
					return user + " " + cs + " " + bs
				}).Named("joined")
			col := newCollector[string](len(want))
			streamlet.Consume(joined, col.add)
			run(t, b, col.done)
			got := col.all()
			sort.Strings(got)
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func TestUnionCloneRepartitionTransform(t *testing.T) {
	b := streamlet.New("misc")
	a := streamlet.Slice(b, "a", func(int) []int { return []int{1, 2, 3} })
	c := streamlet.Slice(b, "b", func(int) []int { return []int{10, 20} })
	u := streamlet.Union(a, c)
	parts := streamlet.Clone(u, 2)
	even := streamlet.Repartition(parts[0], 3, func(v int, n int) []int { return []int{v % n} })
	tagged := streamlet.Transform(even, func() streamlet.Transformer[int, string] { return &tagger{} })
	col := newCollector[string](10)
	streamlet.Consume(tagged, col.add)
	streamlet.Consume(streamlet.Map(parts[1], func(v int) string { return fmt.Sprint("copy ", v) }), col.add)
	run(t, b, col.done)
	got := col.all()
	sort.Strings(got)
	want := []string{"copy 1", "copy 10", "copy 2", "copy 20", "copy 3", "task0 3", "task1 1", "task1 10", "task2 2", "task2 20"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

// tagger tags elements with its task index.
type tagger struct{ task int }

func (g *tagger) Setup(ctx api.Context) error        { g.task = ctx.TaskIndex(); return nil }
func (g *tagger) Transform(v int, emit func(string)) { emit(fmt.Sprintf("task%d %d", g.task, v)) }
func (g *tagger) Cleanup()                           {}

// TestEventTimeWindowsAcrossTasks sums per key in 100 ms event-time
// windows over two source tasks and two window tasks: the watermarks the
// sources' component generates reach every window task in-band, so every
// window closes, even on a task that never sees the sources' last
// (far-future) elements.
func TestEventTimeWindowsAcrossTasks(t *testing.T) {
	type ev struct {
		Key string
		At  int64
		V   int64
	}
	gen := func(task int) []ev {
		var out []ev
		at := int64(1_000_000 + task)
		for i := 0; i < 2000; i++ {
			at += int64(i % 3)
			out = append(out, ev{fmt.Sprint("k", (i*7+task)%5), at - int64(i%40), int64(1 + i%9)})
		}
		return append(out, ev{"end", at + 1_000_000, 0})
	}
	want := map[string]int64{}
	for task := 0; task < 2; task++ {
		for _, e := range gen(task) {
			if e.Key != "end" {
				want[fmt.Sprintf("%s/%d", e.Key, e.At-e.At%100)] += e.V
			}
		}
	}
	b := streamlet.New("evt")
	b.RegisterType(1, ev{}, streamlet.JSONCodec[ev]{})
	src := streamlet.Slice(b, "events", gen).Parallelism(2)
	keyed := streamlet.KeyBy(src, func(e ev) string { return e.Key })
	sums := streamlet.ReduceByKeyAndWindow(keyed, streamlet.WindowConfig{
		Assigner: window.Tumbling(100 * time.Millisecond), Time: window.EventTime, MaxDelay: 50 * time.Millisecond,
	}, func(e ev) time.Time { return time.UnixMilli(e.At) },
		window.Funcs[ev, int64, int64]{
			InitFn:   func() int64 { return 0 },
			AddFn:    func(a int64, e ev) int64 { return a + e.V },
			MergeFn:  func(a, b int64) int64 { return a + b },
			ResultFn: func(a int64) int64 { return a },
		}).Parallelism(2)
	col := newCollector[streamlet.Windowed[string, int64]](len(want))
	streamlet.Consume(sums, col.add)
	s := run(t, b, col.done)
	got := map[string]int64{}
	for _, r := range col.all() {
		if r.Firing != window.Final {
			t.Errorf("result %+v is not final", r)
		}
		got[fmt.Sprintf("%s/%d", r.Key, r.Window.Start)] += r.Value
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %d windows, want %d", len(got), len(want))
	}
	if late := s.Component("window-3").Counters["window.late"]; late != 0 {
		t.Errorf("%d late elements", late)
	}
}
