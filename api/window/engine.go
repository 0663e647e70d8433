package window

import (
	"container/heap"
	"sort"

	"github.com/egret-stream/egret/api"
)

// Result is one emitted window result.
type Result[K comparable, OUT any] struct {
	Key    K
	Window Window
	Value  OUT
	Firing Firing
	// Count is the number of elements aggregated (for a global window:
	// since it was last purged).
	Count int64
}

// engineConfig is what the engine needs of a Spec.
type engineConfig struct {
	assigner   Assigner
	lateness   int64 // ms
	earlyCount int64
	earlyEvery int64 // ms
	anchor     bool  // hold inputs as anchors of the results
	maxAnchors int
}

// winState is one window of one key: its accumulator, never its elements.
type winState[ACC any] struct {
	acc         ACC
	count       int64
	sinceEmit   int64 // elements added since the last emission
	lastEmit    int64 // processing ms of the last emission (or creation)
	fired       bool  // the final result was emitted
	first, last int64 // smallest and largest timestamps (global triggers)
	anchors     []api.Tuple
	timers      []*timer // this window's pending timers, removed with it
}

type keyState[ACC any] struct {
	wins map[Window]*winState[ACC]
	n    int64 // elements seen (count windows)
	// timerAt is the event-time timer registered for the key in keyed
	// state (noTimer: none).
	timerAt int64
}

// timer fires (or purges) a time window at a watermark. Its key and
// window are found through ref, so the heap needs no type parameter.
type timer struct {
	at    int64
	purge bool
	index int // in the heap; -1 once popped or removed
	ref   any // *timerRef[K]
}

type timerRef[K comparable] struct {
	key K
	w   Window
}

type timerHeap []*timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	t.index = -1
	*h = old[:len(old)-1]
	return t
}

// Stats counts what an engine did.
type Stats struct {
	Final, Partial, Updates int64
	// Late counts elements dropped because every window they belong to
	// was past the allowed lateness.
	Late int64
	// Unanchored counts inputs acknowledged at once because the bolt
	// already held MaxAnchors inputs.
	Unanchored int64
	// Open is the number of open windows (window × key) now; Anchors the
	// number of inputs held as anchors now; Timers the pending window
	// timers (at most two per open time window).
	Open, Anchors, Timers int
}

// engine is the windowing logic of one task, independent of the runtime:
// the bolt feeds it elements, watermarks and clock ticks, and it calls
// emit with results and ack for inputs it no longer holds.
type engine[K comparable, IN, ACC, OUT any] struct {
	cfg     engineConfig
	agg     AggregateFunc[IN, ACC, OUT]
	keys    map[K]*keyState[ACC]
	timers  timerHeap
	wm      int64
	now     int64
	refs    map[api.Tuple]int
	emit    func(r Result[K, OUT], anchors []api.Tuple)
	ack     func(api.Tuple)
	stats   Stats
	scratch []Window
	// dirty holds the keys changed since the last save, when the engine
	// is checkpointed (nil otherwise).
	dirty map[K]struct{}
	// In keyed state, keys are loaded on their first use (load) and
	// dropped from memory after each save (evict); onAdvance fires the
	// keyed timers due at a new watermark, which loads their keys. err
	// is the first error of load or onAdvance, reported at the next save.
	load      func(K) (keyRecord[K, ACC], bool, error)
	onAdvance func(wm int64) error
	evict     bool
	err       error
}

func newEngine[K comparable, IN, ACC, OUT any](cfg engineConfig, agg AggregateFunc[IN, ACC, OUT],
	emit func(Result[K, OUT], []api.Tuple), ack func(api.Tuple)) *engine[K, IN, ACC, OUT] {
	return &engine[K, IN, ACC, OUT]{cfg: cfg, agg: agg, keys: map[K]*keyState[ACC]{}, wm: NoWatermark,
		refs: map[api.Tuple]int{}, emit: emit, ack: ack}
}

func (e *engine[K, IN, ACC, OUT]) key(k K) *keyState[ACC] {
	ks := e.keys[k]
	if ks == nil && e.load != nil && !e.changed(k) {
		r, ok, err := e.load(k)
		switch {
		case err != nil:
			e.fail(err)
		case ok:
			ks = e.restore(k, r)
		}
	}
	e.touch(k)
	if ks == nil {
		ks = &keyState[ACC]{wins: map[Window]*winState[ACC]{}, timerAt: noTimer}
		e.keys[k] = ks
	}
	return ks
}

func (e *engine[K, IN, ACC, OUT]) newWindow(ks *keyState[ACC], k K, w Window) *winState[ACC] {
	st := &winState[ACC]{acc: e.agg.Init(), lastEmit: e.now}
	ks.wins[w] = st
	e.stats.Open++
	if e.cfg.assigner.isTime() {
		e.addTimers(k, w, st)
	}
	return st
}

// dropTimers removes a deleted or merged window's pending timers, so the
// heap holds only timers of open windows.
func (e *engine[K, IN, ACC, OUT]) dropTimers(st *winState[ACC]) {
	for _, t := range st.timers {
		if t.index >= 0 {
			heap.Remove(&e.timers, t.index)
			t.index = -1
		}
	}
	st.timers = nil
}

func (e *engine[K, IN, ACC, OUT]) deleteWindow(k K, ks *keyState[ACC], w Window) {
	st := ks.wins[w]
	if st == nil {
		return
	}
	e.touch(k)
	e.releaseAll(st)
	e.dropTimers(st)
	delete(ks.wins, w)
	e.stats.Open--
	if len(ks.wins) == 0 && e.cfg.assigner.kind != kindCount {
		delete(e.keys, k)
	}
}

// expired reports whether a time window is past the allowed lateness.
func (e *engine[K, IN, ACC, OUT]) expired(w Window) bool {
	return w.MaxTimestamp()+e.cfg.lateness <= e.wm
}

// add folds one element into its windows. late reports that it belongs
// to no window that is still open (it was dropped); held that the engine
// keeps t as an anchor and will ack it itself, so the caller must ack t
// when held is false.
func (e *engine[K, IN, ACC, OUT]) add(k K, v IN, ts int64, t api.Tuple, now int64) (late, held bool) {
	e.now = now
	anchor := e.cfg.anchor && t != nil
	if anchor && len(e.refs) >= e.cfg.maxAnchors && e.refs[t] == 0 {
		anchor = false
		e.stats.Unanchored++
	}
	if anchor {
		// Held for the duration of add, so a window firing inside add
		// cannot ack t before its other windows took it.
		e.refs[t]++
	}
	done := func(isLate bool) (bool, bool) {
		if !anchor {
			return isLate, false
		}
		if isLate {
			// No window took t: the caller emits it on the late stream
			// and acks it.
			if e.refs[t]--; e.refs[t] == 0 {
				delete(e.refs, t)
			}
			return true, false
		}
		e.release(t)
		return false, true
	}
	into := func(st *winState[ACC]) {
		st.acc = e.agg.Add(st.acc, v)
		st.count++
		st.sinceEmit++
		if st.count == 1 || ts < st.first {
			st.first = ts
		}
		if st.count == 1 || ts > st.last {
			st.last = ts
		}
		if anchor {
			st.anchors = append(st.anchors, t)
			e.refs[t]++
		}
	}
	a := e.cfg.assigner
	ks := e.key(k)
	switch a.kind {
	case kindCount:
		i := ks.n
		ks.n++
		for end := (i/a.slide + 1) * a.slide; end <= i+a.size; end += a.slide {
			w := Window{end - a.size, end}
			st := ks.wins[w]
			if st == nil {
				st = e.newWindow(ks, k, w)
			}
			into(st)
			if end == i+1 {
				e.fire(k, w, st, Final)
				e.deleteWindow(k, ks, w)
			} else {
				e.early(k, w, st)
			}
		}
	case kindGlobal:
		st := ks.wins[GlobalWindow]
		if st == nil {
			st = e.newWindow(ks, k, GlobalWindow)
		}
		into(st)
		if !e.trigger(k, ks, st, a.trigger.OnElement(e.triggerState(st))) {
			e.early(k, GlobalWindow, st)
		}
	case kindSession:
		w, st := e.mergeSession(k, ks, Window{ts, ts + a.gap})
		if st == nil {
			return done(true)
		}
		into(st)
		e.afterAdd(k, w, st)
	default:
		e.scratch = a.assign(e.scratch[:0], ts)
		accepted := false
		for _, w := range e.scratch {
			if e.expired(w) {
				continue
			}
			accepted = true
			st := ks.wins[w]
			if st == nil {
				st = e.newWindow(ks, k, w)
			}
			into(st)
			e.afterAdd(k, w, st)
		}
		if !accepted {
			if len(ks.wins) == 0 {
				delete(e.keys, k)
			}
			e.stats.Late++
			return done(true)
		}
	}
	return done(false)
}

// afterAdd emits an update of a window that already fired, or an early
// result when one is due.
func (e *engine[K, IN, ACC, OUT]) afterAdd(k K, w Window, st *winState[ACC]) {
	if st.fired {
		e.fire(k, w, st, Update)
		return
	}
	e.early(k, w, st)
}

func (e *engine[K, IN, ACC, OUT]) early(k K, w Window, st *winState[ACC]) {
	if e.cfg.earlyCount > 0 && st.sinceEmit >= e.cfg.earlyCount {
		e.fire(k, w, st, Partial)
	}
}

// mergeSession returns the session window of a new element after merging
// every session it overlaps, or a nil state when that session is late.
func (e *engine[K, IN, ACC, OUT]) mergeSession(k K, ks *keyState[ACC], nw Window) (Window, *winState[ACC]) {
	var over []Window
	merged := nw
	for w := range ks.wins {
		if w.Start < nw.End && nw.Start < w.End {
			over = append(over, w)
			merged.Start = min(merged.Start, w.Start)
			merged.End = max(merged.End, w.End)
		}
	}
	if e.expired(merged) {
		if len(ks.wins) == 0 {
			delete(e.keys, k)
		}
		e.stats.Late++
		return merged, nil
	}
	if len(over) == 1 && over[0] == merged {
		return merged, ks.wins[merged]
	}
	sort.Slice(over, func(i, j int) bool { return over[i].Start < over[j].Start })
	acc := e.agg.Init()
	var count, since int64
	var anchors []api.Tuple
	fired := false
	first, last := nw.Start, nw.Start
	for _, w := range over {
		o := ks.wins[w]
		acc = e.agg.Merge(acc, o.acc)
		count += o.count
		since += o.sinceEmit
		anchors = append(anchors, o.anchors...)
		o.anchors = nil // moved, not released
		fired = fired || o.fired
		first, last = min(first, o.first), max(last, o.last)
		e.dropTimers(o)
		delete(ks.wins, w)
		e.stats.Open--
	}
	st := ks.wins[merged]
	if st == nil {
		st = e.newWindow(ks, k, merged)
	}
	st.acc, st.count, st.sinceEmit, st.anchors = acc, count, since, anchors
	st.first, st.last = first, last
	// A fired session that the element extends past the watermark is
	// open again: its next result is a new final one.
	st.fired = fired && merged.MaxTimestamp() <= e.wm
	return merged, st
}

func (e *engine[K, IN, ACC, OUT]) triggerState(st *winState[ACC]) TriggerState {
	return TriggerState{Count: st.count, Watermark: e.wm, Now: e.now, First: st.first, Last: st.last}
}

// trigger applies a global window's trigger decision; it reports whether
// it emitted.
func (e *engine[K, IN, ACC, OUT]) trigger(k K, ks *keyState[ACC], st *winState[ACC], act Action) bool {
	switch act {
	case Fire:
		e.fire(k, GlobalWindow, st, Partial)
		return true
	case FireAndPurge:
		e.fire(k, GlobalWindow, st, Final)
		e.deleteWindow(k, ks, GlobalWindow)
		return true
	}
	return false
}

// fire emits a window's result. Final results and updates are anchored to
// the inputs the window holds, which are then released.
func (e *engine[K, IN, ACC, OUT]) fire(k K, w Window, st *winState[ACC], f Firing) {
	e.touch(k)
	r := Result[K, OUT]{Key: k, Window: w, Value: e.agg.Result(st.acc), Firing: f, Count: st.count}
	st.sinceEmit = 0
	st.lastEmit = e.now
	switch f {
	case Partial:
		e.stats.Partial++
		e.emit(r, nil)
		return
	case Final:
		e.stats.Final++
		st.fired = true
	case Update:
		e.stats.Updates++
	}
	e.emit(r, st.anchors)
	e.releaseAll(st)
}

func (e *engine[K, IN, ACC, OUT]) releaseAll(st *winState[ACC]) {
	for _, t := range st.anchors {
		e.release(t)
	}
	st.anchors = nil
}

func (e *engine[K, IN, ACC, OUT]) release(t api.Tuple) {
	if n := e.refs[t] - 1; n > 0 {
		e.refs[t] = n
		return
	}
	delete(e.refs, t)
	e.ack(t)
}

// advance moves the watermark to wm: time windows whose end it reached
// fire, windows past the allowed lateness are dropped, and global
// windows' triggers see the new time.
func (e *engine[K, IN, ACC, OUT]) advance(wm, now int64) {
	e.now = now
	if wm <= e.wm {
		return
	}
	if e.onAdvance != nil {
		if err := e.onAdvance(wm); err != nil {
			e.fail(err)
		}
	}
	e.wm = wm
	for len(e.timers) > 0 && e.timers[0].at <= wm {
		tm := heap.Pop(&e.timers).(*timer)
		ref := tm.ref.(*timerRef[K])
		ks := e.keys[ref.key]
		if ks == nil {
			continue
		}
		st := ks.wins[ref.w]
		if st == nil {
			continue
		}
		if !tm.purge && !st.fired {
			e.fire(ref.key, ref.w, st, Final)
		}
		if tm.purge || e.cfg.lateness == 0 {
			e.deleteWindow(ref.key, ks, ref.w)
		}
	}
	e.onTime()
}

// tick gives the engine the processing clock: early results every
// EarlyInterval, and global triggers.
func (e *engine[K, IN, ACC, OUT]) tick(now int64) {
	e.now = now
	if e.cfg.earlyEvery > 0 {
		for k, ks := range e.keys {
			for w, st := range ks.wins {
				if !st.fired && st.sinceEmit > 0 && now-st.lastEmit >= e.cfg.earlyEvery {
					e.fire(k, w, st, Partial)
				}
			}
		}
	}
	e.onTime()
}

func (e *engine[K, IN, ACC, OUT]) onTime() {
	if e.cfg.assigner.kind != kindGlobal {
		return
	}
	for k, ks := range e.keys {
		if st := ks.wins[GlobalWindow]; st != nil {
			e.trigger(k, ks, st, e.cfg.assigner.trigger.OnTime(e.triggerState(st)))
		}
	}
}

func (e *engine[K, IN, ACC, OUT]) snapshot() Stats {
	s := e.stats
	s.Anchors = len(e.refs)
	s.Timers = len(e.timers)
	return s
}
