package window

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// The property tests feed a window bolt a randomized stream — three input
// tasks with their own event clocks, elements out of order, some far
// behind (late), one input silent long enough to be marked idle, four
// keys, watermarks and ticks interleaved — and compare everything it
// emits (per window and key: every partial, final and update result, its
// value and its anchors; the late stream; the acks) with a brute-force
// reference model fed the same stream.

// mInput is the model's view of one input task.
type mInput struct {
	wm   int64
	last time.Time
	idle bool
}

// mWin is one window × key of the model: it keeps every element.
type mWin struct {
	w       Window
	vals    []int64
	pending []int // ids added since the last final/update
	since   int
	fired   bool
	purged  bool
}

type model struct {
	size, slide, lateness, early int64
	idle                         time.Duration
	inputs                       map[int]*mInput
	order                        []int
	wm                           int64
	wins                         map[string]*mWin
	want                         map[string][]string // per window × key
	anchors                      map[string][][]int  // per window × key, for finals and updates
	late                         []int
}

func newModel(size, slide, lateness, early int64, idle time.Duration, tasks []int, now time.Time) *model {
	m := &model{size: size, slide: slide, lateness: lateness, early: early, idle: idle, inputs: map[int]*mInput{},
		order: tasks, wm: NoWatermark, wins: map[string]*mWin{}, want: map[string][]string{}, anchors: map[string][][]int{}}
	for _, t := range tasks {
		m.inputs[t] = &mInput{wm: NoWatermark, last: now}
	}
	return m
}

func sum(v []int64) int64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return s
}

func (m *model) emit(id string, mw *mWin, f Firing) {
	m.want[id] = append(m.want[id], fmt.Sprintf("%s:%d", f, sum(mw.vals)))
	mw.since = 0
	if f != Partial {
		m.anchors[id] = append(m.anchors[id], mw.pending)
		mw.pending = nil
	}
}

// recompute applies the watermark rule: minimum over the inputs that are
// not idle, never going back.
func (m *model) recompute(now time.Time) {
	lowest, any := int64(1<<62), false
	for _, t := range m.order {
		in := m.inputs[t]
		if !in.idle && now.Sub(in.last) >= m.idle {
			in.idle = true
		}
		if !in.idle {
			any = true
			lowest = min(lowest, in.wm)
		}
	}
	if !any || lowest <= m.wm {
		return
	}
	m.wm = lowest
	for id, mw := range m.wins {
		if !mw.fired && mw.w.End-1 <= m.wm {
			mw.fired = true
			m.emit(id, mw, Final)
		}
		if mw.w.End-1+m.lateness <= m.wm {
			mw.purged = true
		}
	}
}

func (m *model) data(id, task int, key string, ts, v int64, now time.Time) {
	accepted := false
	for s := ts - m.size + 1; s <= ts; s++ {
		if ((s%m.slide)+m.slide)%m.slide != 0 {
			continue
		}
		w := Window{s, s + m.size}
		if w.End-1+m.lateness <= m.wm {
			continue
		}
		accepted = true
		wid := fmt.Sprintf("%s/%d/%d", key, w.Start, w.End)
		mw := m.wins[wid]
		if mw == nil || mw.purged {
			mw = &mWin{w: w}
			m.wins[wid] = mw
		}
		mw.vals = append(mw.vals, v)
		mw.pending = append(mw.pending, id)
		mw.since++
		if mw.fired {
			m.emit(wid, mw, Update)
		} else if m.early > 0 && int64(mw.since) >= m.early {
			m.emit(wid, mw, Partial)
		}
	}
	if !accepted {
		m.late = append(m.late, id)
	}
	in := m.inputs[task]
	in.last, in.idle = now, false
	m.recompute(now)
}

func (m *model) watermark(task int, wm int64, now time.Time) {
	in := m.inputs[task]
	in.last, in.idle = now, false
	in.wm = max(in.wm, wm)
	m.recompute(now)
}

func TestTimeWindowsMatchModel(t *testing.T) {
	for seed := uint64(1); seed <= 24; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Logf("seed %d", seed)
			checkTimeWindows(t, seed)
		})
	}
}

func checkTimeWindows(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 15))
	size := []int64{100, 250, 1000}[rng.IntN(3)]
	slide := size / []int64{1, 2, 5}[rng.IntN(3)]
	lateness := []int64{0, 200, 1000}[rng.IntN(3)]
	early := []int64{0, 0, 3}[rng.IntN(3)]
	const idle = 500 * time.Millisecond
	const bound = 50
	t.Logf("size %dms slide %dms lateness %dms early every %d", size, slide, lateness, early)

	clk := newClock()
	tasks := []int{1, 2, 3}
	ctx := newFakeContext([]topology.Input{
		{Component: "src", Stream: "default", Grouping: topology.Fields, Fields: []string{"key"}},
		{Component: "src", Stream: WatermarkStream, Grouping: topology.All},
	}, map[string][]int{"src": tasks})
	b, err := NewBolt(Spec[string, int64, int64, int64]{
		Assigner:        Sliding(time.Duration(size)*time.Millisecond, time.Duration(slide)*time.Millisecond),
		Key:             func(t api.Tuple) string { return t.String(0) },
		Value:           func(t api.Tuple) int64 { return t.Int64(2) },
		Timestamp:       func(t api.Tuple) time.Time { return t.Time(1) },
		Aggregate:       Sum[int64](),
		AllowedLateness: time.Duration(lateness) * time.Millisecond,
		EarlyCount:      int(early),
		LateStream:      true,
		IdleTimeout:     idle,
		MaxAnchors:      1 << 30,
		Now:             clk.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := newFakeCollector()
	if err := b.Prepare(ctx, out); err != nil {
		t.Fatal(err)
	}
	m := newModel(size, slide, lateness, early, idle, tasks, clk.now())

	ids := map[api.Tuple]int{}
	var data, marks []api.Tuple
	ev := map[int]int64{1: 1_000_000, 2: 1_000_000, 3: 1_000_000}
	const steps = 3000
	idleMarked := false
	for i := 0; i < steps; i++ {
		clk.add(time.Duration(rng.IntN(20)) * time.Millisecond)
		task := tasks[rng.IntN(3)]
		if task == 3 && i >= steps/3 && i < 2*steps/3 {
			task = 1 + rng.IntN(2) // task 3 is silent for a while: idle
		}
		switch r := rng.IntN(100); {
		case r < 8:
			wm := ev[task] - bound
			if rng.IntN(2) == 0 {
				wm -= wm%10 + 1 // on a window boundary more often than by chance
			}
			tp := watermarkTuple(task, wm)
			marks = append(marks, tp)
			b.Execute(tp)
			m.watermark(task, wm, clk.now())
		case r < 12:
			b.Execute(api.NewTickTuple())
			m.recompute(clk.now())
		default:
			ev[task] += int64(rng.IntN(30))
			ts := ev[task] - int64(rng.IntN(bound))
			if rng.IntN(20) == 0 {
				ts = ev[task] - int64(rng.IntN(3000)) // far behind: late or within lateness
			}
			key := fmt.Sprint("k", rng.IntN(4))
			v := int64(1 + rng.IntN(10))
			tp := dataTuple(task, key, ts, v)
			ids[tp] = len(data)
			data = append(data, tp)
			b.Execute(tp)
			m.data(ids[tp], task, key, ts, v, clk.now())
		}
		if len(b.tracker.Idle()) > 0 {
			idleMarked = true
		}
	}
	// Close everything.
	for _, task := range tasks {
		clk.add(time.Millisecond)
		tp := watermarkTuple(task, 1<<50)
		marks = append(marks, tp)
		b.Execute(tp)
		m.watermark(task, 1<<50, clk.now())
	}

	got := map[string][]string{}
	gotAnchors := map[string][][]int{}
	for _, e := range out.stream("default") {
		id := resultKey(e)
		got[id] = append(got[id], fmt.Sprintf("%s:%d", e.values[4], e.values[3]))
		if e.values[4] != Partial.String() {
			var a []int
			for _, t := range e.anchors {
				a = append(a, ids[t])
			}
			gotAnchors[id] = append(gotAnchors[id], a)
		} else if len(e.anchors) != 0 {
			t.Errorf("%s: partial result anchored to %d tuples", id, len(e.anchors))
		}
	}
	if !idleMarked {
		t.Errorf("input 3 was never marked idle")
	}
	if len(got) == 0 {
		t.Fatal("no result emitted")
	}
	compareMaps(t, "results", got, m.want)
	compareMaps(t, "anchors", gotAnchors, m.anchors)
	var late []int
	for _, e := range out.stream(LateStream) {
		late = append(late, ids[e.anchors[0]])
	}
	if !reflect.DeepEqual(late, m.late) {
		t.Errorf("late stream: got %d elements %v, model %d %v", len(late), late, len(m.late), m.late)
	}
	for _, tp := range append(data, marks...) {
		if n := out.acked[tp]; n != 1 {
			t.Errorf("tuple %#v acked %d times", tp, n)
			break
		}
	}
	st := b.Stats()
	if st.Open != 0 || st.Anchors != 0 || st.Timers != 0 {
		t.Errorf("after the last watermark: %d windows open, %d anchors held, %d timers", st.Open, st.Anchors, st.Timers)
	}
	if got, want := ctx.counters["window.watermark"].Value(), int64(1<<50); got != want {
		t.Errorf("window.watermark counter = %d, want %d", got, want)
	}
	if got := ctx.counters["window.late"].Value(); got != int64(len(m.late)) {
		t.Errorf("window.late counter = %d, model has %d late", got, len(m.late))
	}
	t.Logf("%d elements, %d windows × keys, %d late", len(data), len(m.want), len(m.late))
}

func compareMaps[V any](t *testing.T, what string, got, want map[string]V) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	bad := 0
	for _, k := range keys {
		if !reflect.DeepEqual(got[k], want[k]) {
			if bad++; bad <= 5 {
				t.Errorf("%s of %s: got %v, model %v", what, k, got[k], want[k])
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d windows differ in all", what, bad)
	}
}
