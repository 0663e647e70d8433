package window

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

var srcInputs = []topology.Input{
	{Component: "src", Stream: "default", Grouping: topology.Fields, Fields: []string{"key"}},
	{Component: "src", Stream: WatermarkStream, Grouping: topology.All},
}

func sumSpec(a Assigner, clk *clock) Spec[string, int64, int64, int64] {
	return Spec[string, int64, int64, int64]{
		Assigner:  a,
		Key:       func(t api.Tuple) string { return t.String(0) },
		Value:     func(t api.Tuple) int64 { return t.Int64(2) },
		Timestamp: func(t api.Tuple) time.Time { return t.Time(1) },
		Aggregate: Sum[int64](),
		Now:       clk.now,
	}
}

func prepared[K comparable, IN, ACC, OUT any](t *testing.T, spec Spec[K, IN, ACC, OUT], inputs []topology.Input, tasks map[string][]int) (*Bolt[K, IN, ACC, OUT], *fakeCollector, *fakeContext) {
	t.Helper()
	b, err := NewBolt(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx := newFakeContext(inputs, tasks)
	out := newFakeCollector()
	if err := b.Prepare(ctx, out); err != nil {
		t.Fatal(err)
	}
	return b, out, ctx
}

// results formats the default-stream emits as "key [start,end) firing value".
func results(out *fakeCollector) []string {
	var s []string
	for _, e := range out.stream("default") {
		s = append(s, fmt.Sprintf("%v [%d,%d) %v %v", e.values[0], e.values[1], e.values[2], e.values[4], e.values[3]))
	}
	return s
}

func TestCountWindowsMatchModel(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(6)
		slide := 1 + rng.IntN(n)
		t.Run(fmt.Sprintf("seed%d-n%d-slide%d", seed, n, slide), func(t *testing.T) {
			t.Logf("seed %d: count %d every %d", seed, n, slide)
			clk := newClock()
			b, out, _ := prepared(t, sumSpec(SlidingCount(n, slide), clk), srcInputs[:1], map[string][]int{"src": {1}})
			seen := map[string][]int64{}
			var want []string
			var tuples []api.Tuple
			for i := 0; i < 500; i++ {
				key := fmt.Sprint("k", rng.IntN(3))
				v := int64(rng.IntN(100))
				tp := dataTuple(1, key, 0, v)
				tuples = append(tuples, tp)
				b.Execute(tp)
				seen[key] = append(seen[key], v)
				if c := len(seen[key]); c%slide == 0 {
					lo := max(0, c-n)
					want = append(want, fmt.Sprintf("%s [%d,%d) final %d", key, c-n, c, sum(seen[key][lo:c])))
				}
			}
			if got := results(out); !reflect.DeepEqual(got, want) {
				t.Errorf("got %d results, model %d\n got %.400v\nwant %.400v", len(got), len(want), got, want)
			}
			// Elements of windows still open stay held; the others were
			// acked exactly once.
			held := b.Stats().Anchors
			acked := 0
			for _, tp := range tuples {
				switch out.acked[tp] {
				case 0:
				case 1:
					acked++
				default:
					t.Fatalf("tuple acked %d times", out.acked[tp])
				}
			}
			if acked+held != len(tuples) {
				t.Errorf("%d acked + %d held != %d tuples", acked, held, len(tuples))
			}
		})
	}
}

// sessions computes the sessions of timestamps (brute force).
func sessions(ts []int64, vals []int64, gap int64) []string {
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ts[idx[a]] < ts[idx[b]] })
	var out []string
	start, end, s := int64(0), int64(0), int64(0)
	for n, i := range idx {
		if n > 0 && ts[i] < end {
			end = max(end, ts[i]+gap)
			s += vals[i]
			continue
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("[%d,%d) final %d", start, end, s))
		}
		start, end, s = ts[i], ts[i]+gap, vals[i]
	}
	if len(idx) > 0 {
		out = append(out, fmt.Sprintf("[%d,%d) final %d", start, end, s))
	}
	return out
}

func TestSessionWindowsMatchModel(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 9))
			const gap, bound = 100, 40
			clk := newClock()
			spec := sumSpec(Session(gap*time.Millisecond), clk)
			b, out, _ := prepared(t, spec, srcInputs, map[string][]int{"src": {1}})
			ts := map[string][]int64{}
			vals := map[string][]int64{}
			ev := int64(1_000_000)
			for i := 0; i < 2000; i++ {
				clk.add(time.Millisecond)
				ev += int64(rng.IntN(60)) // gaps around the session gap
				key := fmt.Sprint("k", rng.IntN(3))
				x := ev - int64(rng.IntN(bound)) // out of order within the bound: never late
				v := int64(1 + rng.IntN(9))
				b.Execute(dataTuple(1, key, x, v))
				ts[key] = append(ts[key], x)
				vals[key] = append(vals[key], v)
				if st := b.Stats(); st.Timers > 2*st.Open {
					t.Fatalf("%d timers for %d open sessions: merged sessions left timers behind", st.Timers, st.Open)
				}
				if rng.IntN(5) == 0 {
					b.Execute(watermarkTuple(1, ev-bound-1))
				}
			}
			b.Execute(watermarkTuple(1, 1<<50))
			got := map[string][]string{}
			for _, r := range results(out) {
				k, rest, _ := strings.Cut(r, " ")
				got[k] = append(got[k], rest)
			}
			for k := range ts {
				want := sessions(ts[k], vals[k], gap)
				g := append([]string(nil), got[k]...)
				sort.Slice(g, func(i, j int) bool { return sessionStart(g[i]) < sessionStart(g[j]) })
				if !reflect.DeepEqual(g, want) {
					t.Errorf("key %s: got %d sessions, model %d\n got %.300v\nwant %.300v", k, len(g), len(want), g, want)
				}
			}
			if s := b.Stats(); s.Late != 0 || s.Open != 0 {
				t.Errorf("stats %+v: want no late element and no open window", s)
			}
		})
	}
}

func sessionStart(s string) int64 {
	var a, b int64
	fmt.Sscanf(s, "[%d,%d)", &a, &b)
	return a
}

func TestEarlyFiringEveryNThenFinal(t *testing.T) {
	clk := newClock()
	spec := sumSpec(Tumbling(time.Second), clk)
	spec.EarlyCount = 2
	b, out, _ := prepared(t, spec, srcInputs, map[string][]int{"src": {1}})
	for i := int64(0); i < 5; i++ {
		b.Execute(dataTuple(1, "a", 10_000+i, 1))
	}
	b.Execute(watermarkTuple(1, 10_999))
	want := []string{"a [10000,11000) partial 2", "a [10000,11000) partial 4", "a [10000,11000) final 5"}
	if got := results(out); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestEarlyFiringEveryIntervalOnTicks(t *testing.T) {
	clk := newClock()
	spec := sumSpec(Tumbling(time.Minute), clk)
	spec.EarlyInterval = time.Second
	b, out, _ := prepared(t, spec, srcInputs, map[string][]int{"src": {1}})
	b.Execute(dataTuple(1, "a", 60_000, 1))
	clk.add(500 * time.Millisecond)
	b.Execute(api.NewTickTuple()) // not yet due
	clk.add(500 * time.Millisecond)
	b.Execute(api.NewTickTuple()) // due
	clk.add(2 * time.Second)
	b.Execute(api.NewTickTuple()) // nothing changed: no result
	b.Execute(dataTuple(1, "a", 60_001, 2))
	clk.add(time.Second)
	b.Execute(api.NewTickTuple())
	b.Execute(watermarkTuple(1, 200_000))
	want := []string{"a [60000,120000) partial 1", "a [60000,120000) partial 3", "a [60000,120000) final 3"}
	if got := results(out); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestGlobalWindowWithCountTrigger(t *testing.T) {
	clk := newClock()
	b, out, _ := prepared(t, sumSpec(Global(CountTrigger(3)), clk), srcInputs, map[string][]int{"src": {1}})
	for i := int64(1); i <= 7; i++ {
		b.Execute(dataTuple(1, "a", i, i))
	}
	g := GlobalWindow
	want := []string{fmt.Sprintf("a [%d,%d) final 6", g.Start, g.End), fmt.Sprintf("a [%d,%d) final 15", g.Start, g.End)}
	if got := results(out); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if s := b.Stats(); s.Open != 1 || s.Anchors != 1 {
		t.Errorf("want the 7th element open and held, stats %+v", s)
	}
}

func TestGlobalWindowWithTimeTrigger(t *testing.T) {
	clk := newClock()
	// Fire (keep) every element count of 2, purge when the watermark
	// passes the last element by 100ms.
	trig := TriggerFuncs{
		Element: func(s TriggerState) Action {
			if s.Count%2 == 0 {
				return Fire
			}
			return Continue
		},
		Time: func(s TriggerState) Action {
			if s.Watermark >= s.Last+100 {
				return FireAndPurge
			}
			return Continue
		},
	}
	b, out, _ := prepared(t, sumSpec(Global(trig), clk), srcInputs, map[string][]int{"src": {1}})
	b.Execute(dataTuple(1, "a", 1000, 1))
	b.Execute(dataTuple(1, "a", 1010, 2))
	b.Execute(watermarkTuple(1, 1050))
	b.Execute(dataTuple(1, "a", 1020, 3))
	b.Execute(watermarkTuple(1, 1120))
	var got []string
	for _, r := range results(out) {
		f := strings.Fields(r)
		got = append(got, f[len(f)-2]+" "+f[len(f)-1])
	}
	if want := []string{"partial 3", "final 6"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestProcessingTimeWindowsCloseOnTheClock(t *testing.T) {
	clk := &clock{t: time.UnixMilli(10_000)}
	spec := sumSpec(Tumbling(time.Second), clk)
	spec.Time = ProcessingTime
	spec.Timestamp = nil
	b, out, _ := prepared(t, spec, srcInputs[:1], map[string][]int{"src": {1}})
	b.Execute(dataTuple(1, "a", 0, 1)) // the tuple's own time is ignored
	clk.add(400 * time.Millisecond)
	b.Execute(dataTuple(1, "a", 0, 2))
	clk.add(599 * time.Millisecond) // 10_999: still open
	b.Execute(api.NewTickTuple())
	if got := results(out); len(got) != 0 {
		t.Fatalf("closed early: %v", got)
	}
	clk.add(time.Millisecond) // 11_000
	b.Execute(dataTuple(1, "a", 0, 4))
	clk.add(time.Second)
	b.Execute(api.NewTickTuple())
	want := []string{"a [10000,11000) final 3", "a [11000,12000) final 4"}
	if got := results(out); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestIngestionTimeStampsOnArrival(t *testing.T) {
	clk := &clock{t: time.UnixMilli(10_000)}
	spec := sumSpec(Tumbling(time.Second), clk)
	spec.Time = IngestionTime
	spec.Timestamp = nil
	b, out, _ := prepared(t, spec, srcInputs[:1], map[string][]int{"src": {1}})
	b.Execute(dataTuple(1, "a", 99_999_999, 1))
	clk.add(1500 * time.Millisecond)
	b.Execute(api.NewTickTuple())
	if want := []string{"a [10000,11000) final 1"}; !reflect.DeepEqual(results(out), want) {
		t.Errorf("got %v, want %v", results(out), want)
	}
}

func TestGeneratedWatermarksPerInputTask(t *testing.T) {
	clk := newClock()
	spec := sumSpec(Tumbling(time.Second), clk)
	spec.Watermark = func() Generator { return BoundedOutOfOrderness(100 * time.Millisecond) }
	spec.IdleTimeout = time.Second
	b, out, ctx := prepared(t, spec, srcInputs[:1], map[string][]int{"src": {1, 2}})
	b.Execute(dataTuple(1, "a", 5_000, 1))
	b.Execute(dataTuple(1, "a", 7_000, 1)) // task 1 at 6_899, task 2 has none yet
	if len(results(out)) != 0 {
		t.Fatalf("fired while task 2 holds the watermark: %v", results(out))
	}
	b.Execute(dataTuple(2, "a", 6_500, 1)) // task 2 at 6_399: [5000,6000) closes
	if want := []string{"a [5000,6000) final 1"}; !reflect.DeepEqual(results(out), want) {
		t.Fatalf("got %v, want %v", results(out), want)
	}
	if b.Watermark() != 6_399 {
		t.Errorf("watermark %d, want 6399", b.Watermark())
	}
	// Task 2 goes silent: after the idle timeout only task 1 counts.
	clk.add(1500 * time.Millisecond)
	b.Execute(dataTuple(1, "b", 9_000, 1))
	if b.Watermark() != 8_899 {
		t.Errorf("watermark %d with task 2 idle, want 8899", b.Watermark())
	}
	if got := ctx.counters["window.idle.marks"].Value(); got != 1 {
		t.Errorf("idle marks %d, want 1", got)
	}
	wms := out.stream(WatermarkStream)
	if len(wms) == 0 || wms[len(wms)-1].values[0] != int64(8_899) {
		t.Errorf("watermarks emitted downstream: %v", wms)
	}
	// Without a downstream subscriber no watermark is emitted.
	b, out, _ = prepared(t, spec, srcInputs[:1], map[string][]int{"src": {1}})
	ctxNoDown := newFakeContext(srcInputs[:1], map[string][]int{"src": {1}})
	ctxNoDown.topo.Components = ctxNoDown.topo.Components[:1]
	if err := b.Prepare(ctxNoDown, out); err != nil {
		t.Fatal(err)
	}
	b.Execute(dataTuple(1, "a", 5_000, 1))
	if n := len(out.stream(WatermarkStream)); n != 0 {
		t.Errorf("%d watermarks emitted with no subscriber", n)
	}
}

func TestAckOnAddAndMaxAnchors(t *testing.T) {
	clk := newClock()
	spec := sumSpec(Tumbling(time.Second), clk)
	spec.Guarantee = AckOnAdd
	b, out, _ := prepared(t, spec, srcInputs, map[string][]int{"src": {1}})
	tp := dataTuple(1, "a", 1_000, 1)
	b.Execute(tp)
	if out.acked[tp] != 1 {
		t.Errorf("AckOnAdd: input acked %d times at once", out.acked[tp])
	}
	b.Execute(watermarkTuple(1, 5_000))
	if e := out.stream("default"); len(e) != 1 || len(e[0].anchors) != 0 {
		t.Errorf("AckOnAdd: want one unanchored result, got %+v", e)
	}

	spec = sumSpec(Tumbling(time.Second), clk)
	spec.MaxAnchors = 2
	b, out, ctx := prepared(t, spec, srcInputs, map[string][]int{"src": {1}})
	var ts []api.Tuple
	for i := 0; i < 4; i++ {
		ts = append(ts, dataTuple(1, "a", 1_000, 1))
		b.Execute(ts[i])
	}
	if out.acked[ts[0]] != 0 || out.acked[ts[1]] != 0 || out.acked[ts[2]] != 1 || out.acked[ts[3]] != 1 {
		t.Errorf("MaxAnchors 2: acks %v", []int{out.acked[ts[0]], out.acked[ts[1]], out.acked[ts[2]], out.acked[ts[3]]})
	}
	if got := ctx.counters["window.unanchored"].Value(); got != 2 {
		t.Errorf("window.unanchored = %d, want 2", got)
	}
	b.Execute(watermarkTuple(1, 5_000))
	if e := out.stream("default"); len(e) != 1 || len(e[0].anchors) != 2 || e[0].values[3] != int64(4) {
		t.Errorf("want one result of 4 anchored to 2 inputs, got %+v", e)
	}
}

func TestProcessFullWindow(t *testing.T) {
	clk := newClock()
	spec := Spec[string, int64, []int64, string]{
		Assigner:  Tumbling(time.Second),
		Key:       func(t api.Tuple) string { return t.String(0) },
		Value:     func(t api.Tuple) int64 { return t.Int64(2) },
		Timestamp: func(t api.Tuple) time.Time { return t.Time(1) },
		Aggregate: Process(func(v []int64) string { return fmt.Sprint(v) }),
		Now:       clk.now,
	}
	b, out, _ := prepared(t, spec, srcInputs, map[string][]int{"src": {1}})
	for _, v := range []int64{3, 1, 2} {
		b.Execute(dataTuple(1, "a", 1_000+v, v))
	}
	b.Execute(watermarkTuple(1, 2_000))
	if want := []string{"a [1000,2000) final [3 1 2]"}; !reflect.DeepEqual(results(out), want) {
		t.Errorf("got %v, want %v", results(out), want)
	}
}

func TestReduceAndCount(t *testing.T) {
	r := Reduce(func(a, b int) int { return max(a, b) })
	acc := r.Init()
	for _, v := range []int{3, 9, 2} {
		acc = r.Add(acc, v)
	}
	if got := r.Result(r.Merge(acc, r.Add(r.Init(), 11))); got != 11 {
		t.Errorf("Reduce max = %d, want 11", got)
	}
	if got := r.Result(r.Merge(r.Init(), acc)); got != 9 {
		t.Errorf("Reduce merge with empty = %d, want 9", got)
	}
	c := Count[string]()
	if got := c.Result(c.Merge(c.Add(c.Init(), "x"), c.Add(c.Add(c.Init(), "y"), "z"))); got != 3 {
		t.Errorf("Count = %d, want 3", got)
	}
}

func TestSpecValidation(t *testing.T) {
	_, err := NewBolt(Spec[string, int64, int64, int64]{})
	if err == nil {
		t.Fatal("empty spec accepted")
	}
	for _, want := range []string{"no assigner", "no Value function", "no Aggregate function"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := Sliding(time.Second, 2*time.Second).validate(); err == nil {
		t.Error("slide > size accepted")
	}
	// Event time without any watermark source fails at Prepare.
	b, err := NewBolt(sumSpec(Tumbling(time.Second), newClock()))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Prepare(newFakeContext(srcInputs[:1], map[string][]int{"src": {1}}), newFakeCollector()); err == nil || !strings.Contains(err.Error(), "needs watermarks") {
		t.Errorf("Prepare without watermarks: %v", err)
	}
}

func TestAssignSlidingNegativeAndAligned(t *testing.T) {
	a := Sliding(10*time.Millisecond, 5*time.Millisecond)
	got := a.assign(nil, -3)
	want := []Window{{-5, 5}, {-10, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("assign(-3) = %v, want %v", got, want)
	}
	if got := Tumbling(10*time.Millisecond).assign(nil, 10); !reflect.DeepEqual(got, []Window{{10, 20}}) {
		t.Errorf("tumbling assign(10) = %v", got)
	}
}

func TestTrackerMinimumIdleAndMonotonic(t *testing.T) {
	now := time.Unix(0, 0)
	tr := NewTracker([]int{1, 2}, time.Second, now)
	tr.Update(1, 100, now)
	if wm, moved := tr.Advance(now); moved || wm != NoWatermark {
		t.Errorf("with input 2 silent: %d %v", wm, moved)
	}
	tr.Update(2, 50, now)
	if wm, moved := tr.Advance(now); !moved || wm != 50 {
		t.Errorf("min: %d %v, want 50", wm, moved)
	}
	now = now.Add(1500 * time.Millisecond)
	tr.Update(1, 200, now)
	if wm, _ := tr.Advance(now); wm != 200 || !reflect.DeepEqual(tr.Idle(), []int{2}) {
		t.Errorf("input 2 idle: wm %d idle %v", wm, tr.Idle())
	}
	tr.Update(2, 60, now) // back, behind: the watermark does not go back
	if wm, moved := tr.Advance(now); moved || wm != 200 {
		t.Errorf("after input 2 returned behind: %d %v", wm, moved)
	}
	if len(tr.Idle()) != 0 || tr.IdleMarks() != 1 {
		t.Errorf("idle %v marks %d", tr.Idle(), tr.IdleMarks())
	}
}
