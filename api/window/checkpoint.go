package window

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// winRecord is the checkpointed form of one open window of a key: its
// accumulator and bookkeeping, never its elements (unless the aggregate
// is Process, whose accumulator is the elements). Its timers are not
// stored: a restored time window gets its final-result timer back when
// it has not fired, and its purge timer when there is allowed lateness.
type winRecord[ACC any] struct {
	Start, End  int64
	Acc         ACC
	Count       int64
	SinceEmit   int64
	LastEmit    int64
	Fired       bool
	First, Last int64
}

// keyRecord is the checkpointed form of one key: the key, its open
// windows in ascending order and, for count windows, the elements it has
// seen. In keyed state, Timer is the event-time timer registered for the
// key: the earliest time at which one of its windows fires or is purged.
type keyRecord[K comparable, ACC any] struct {
	Key   K
	N     int64
	Timer int64
	Wins  []winRecord[ACC]
}

// noTimer says a key has no timer registered.
const noTimer = math.MinInt64

// keyStore is where a checkpointed engine keeps its keys between saves;
// put gets the timer registered for the key until now (r.Timer is the
// one to register).
type keyStore[K comparable, ACC any] interface {
	put(k K, r keyRecord[K, ACC], registered int64) error
	delete(k K) error
}

func (e *engine[K, IN, ACC, OUT]) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// track makes the engine remember the keys it changes, for save.
func (e *engine[K, IN, ACC, OUT]) track() {
	if e.dirty == nil {
		e.dirty = map[K]struct{}{}
	}
}

func (e *engine[K, IN, ACC, OUT]) touch(k K) {
	if e.dirty != nil {
		e.dirty[k] = struct{}{}
	}
}

// changed reports whether k changed since the last save: a changed key
// that is not in memory holds nothing, whatever its saved record says.
func (e *engine[K, IN, ACC, OUT]) changed(k K) bool {
	_, ok := e.dirty[k]
	return ok
}

// record returns the checkpointed form of key k, false when it holds
// nothing.
func (e *engine[K, IN, ACC, OUT]) record(k K) (keyRecord[K, ACC], bool) {
	ks := e.keys[k]
	if ks == nil {
		return keyRecord[K, ACC]{}, false
	}
	r := keyRecord[K, ACC]{Key: k, N: ks.n, Timer: noTimer, Wins: make([]winRecord[ACC], 0, len(ks.wins))}
	for w, st := range ks.wins {
		if e.cfg.assigner.isTime() {
			at, n := e.times(w, st.fired)
			for _, t := range at[:n] {
				if r.Timer == noTimer || t < r.Timer {
					r.Timer = t
				}
			}
		}
		r.Wins = append(r.Wins, winRecord[ACC]{Start: w.Start, End: w.End, Acc: st.acc, Count: st.count,
			SinceEmit: st.sinceEmit, LastEmit: st.lastEmit, Fired: st.fired, First: st.first, Last: st.last})
	}
	sort.Slice(r.Wins, func(i, j int) bool {
		a, b := r.Wins[i], r.Wins[j]
		return a.Start < b.Start || a.Start == b.Start && a.End < b.End
	})
	return r, true
}

// times returns when a time window's timers fire: its final result
// (unless it fired) and its purge (with allowed lateness), in at[:n].
func (e *engine[K, IN, ACC, OUT]) times(w Window, fired bool) (at [2]int64, n int) {
	if !fired {
		at[n], n = w.MaxTimestamp(), n+1
	}
	if e.cfg.lateness > 0 {
		at[n], n = w.MaxTimestamp()+e.cfg.lateness, n+1
	}
	return at, n
}

// save writes every key changed since the last save to s (deleting the
// keys that hold nothing any more); an engine that evicts then forgets
// its keys, which load brings back when they are used or their timer
// fires.
func (e *engine[K, IN, ACC, OUT]) save(s keyStore[K, ACC]) error {
	if e.err != nil {
		return e.err
	}
	for k := range e.dirty {
		var err error
		if r, ok := e.record(k); ok {
			ks := e.keys[k]
			if err = s.put(k, r, ks.timerAt); err == nil {
				ks.timerAt = r.Timer
			}
		} else {
			err = s.delete(k)
		}
		if err != nil {
			return err
		}
		delete(e.dirty, k)
	}
	if e.evict {
		e.keys, e.timers = map[K]*keyState[ACC]{}, nil
		e.stats.Open = 0
	}
	return nil
}

// reset forgets every window, timer and held input: the engine is as
// new, with watermark wm and clock now (a restore follows).
func (e *engine[K, IN, ACC, OUT]) reset(wm, now int64) {
	e.keys = map[K]*keyState[ACC]{}
	e.timers = nil
	e.refs = map[api.Tuple]int{}
	e.wm, e.now = wm, now
	e.stats.Open, e.stats.Anchors, e.stats.Timers = 0, 0, 0
	e.load, e.onAdvance, e.evict, e.err = nil, nil, false, nil
	if e.dirty != nil {
		clear(e.dirty)
	}
}

// restore puts back a key saved by save, with the timers of its windows.
func (e *engine[K, IN, ACC, OUT]) restore(k K, r keyRecord[K, ACC]) *keyState[ACC] {
	ks := &keyState[ACC]{wins: make(map[Window]*winState[ACC], len(r.Wins)), n: r.N, timerAt: r.Timer}
	e.keys[k] = ks
	for _, wr := range r.Wins {
		w := Window{wr.Start, wr.End}
		st := &winState[ACC]{acc: wr.Acc, count: wr.Count, sinceEmit: wr.SinceEmit, lastEmit: wr.LastEmit,
			fired: wr.Fired, first: wr.First, last: wr.Last}
		ks.wins[w] = st
		e.stats.Open++
		if !e.cfg.assigner.isTime() {
			continue
		}
		e.addTimers(k, w, st)
	}
	return ks
}

// addTimers pushes a time window's pending timers.
func (e *engine[K, IN, ACC, OUT]) addTimers(k K, w Window, st *winState[ACC]) {
	ref := &timerRef[K]{key: k, w: w}
	at, n := e.times(w, st.fired)
	for _, at := range at[:n] {
		t := &timer{at: at, purge: at != w.MaxTimestamp(), ref: ref}
		heap.Push(&e.timers, t)
		st.timers = append(st.timers, t)
	}
}

// State names of a window bolt (see Bolt.InitState).
const (
	// KeysState holds a window bolt task's keys: per key its open windows
	// with their accumulators.
	KeysState = "window.keys"
	// ClockState holds a window bolt task's watermarks: its own, each
	// input task's, and its watermark generators' progress.
	ClockState = "window.clock"
)

// clockRecord is the checkpointed time of a window bolt task.
type clockRecord struct {
	Watermark, Now, Ingest, Emitted int64
	// Inputs and Combined are the watermark tracker's.
	Inputs   map[int]int64
	Combined int64
	// Generators are the encoded per-input generators (Spec.Watermark).
	Generators map[int][]byte
}

// operatorKeys keeps a task's keys in an operator state: every key is in
// memory, and the whole state is encoded at every checkpoint. It is the
// store of tasks whose states have no keyed state, and of the windows
// that look at every key at every tick (global windows, EarlyInterval).
type operatorKeys[K comparable, ACC any] struct {
	keys *api.State[K, keyRecord[K, ACC]]
}

func (o operatorKeys[K, ACC]) put(k K, r keyRecord[K, ACC], _ int64) error {
	o.keys.Put(k, r)
	return nil
}

func (o operatorKeys[K, ACC]) delete(k K) error { o.keys.Delete(k); return nil }

// keyedKeys keeps each key's record in keyed state under the key itself
// (States.SetCurrentKey), with an event-time timer at the earliest time
// one of its windows fires or is purged: a key is in memory from its
// first use or its timer until the next checkpoint, so the open windows
// may outgrow memory on a backend on disk and a checkpoint writes the
// keys that changed only.
type keyedKeys[K comparable, IN, ACC, OUT any] struct {
	states *api.States
	keys   *api.ValueState[keyRecord[K, ACC]]
	e      *engine[K, IN, ACC, OUT]
}

func (c *keyedKeys[K, IN, ACC, OUT]) current(k K) error {
	if err := c.states.SetCurrentKey(k); err != nil {
		return fmt.Errorf("window key %v: %w (Spec.Key must return the value the input is fields-grouped by)", k, err)
	}
	return nil
}

func (c *keyedKeys[K, IN, ACC, OUT]) load(k K) (keyRecord[K, ACC], bool, error) {
	if err := c.current(k); err != nil {
		return keyRecord[K, ACC]{}, false, err
	}
	return c.keys.Value()
}

func (c *keyedKeys[K, IN, ACC, OUT]) put(k K, r keyRecord[K, ACC], registered int64) error {
	if err := c.current(k); err != nil {
		return err
	}
	if registered != r.Timer {
		if registered != noTimer {
			if err := c.states.DeleteEventTimeTimer(registered); err != nil {
				return err
			}
		}
		if r.Timer != noTimer {
			if err := c.states.RegisterEventTimeTimer(r.Timer); err != nil {
				return err
			}
		}
	}
	return c.keys.Update(r)
}

// delete clears a key that holds nothing any more; a timer it may still
// have finds no record when it fires.
func (c *keyedKeys[K, IN, ACC, OUT]) delete(k K) error {
	if err := c.current(k); err != nil {
		return err
	}
	return c.keys.Clear()
}

// OnTimer implements api.TimerHandler: a key's timer brings the key into
// memory, where the engine's own timers fire its windows.
func (c *keyedKeys[K, IN, ACC, OUT]) OnTimer(api.Timer) {
	r, ok, err := c.keys.Value()
	if err != nil {
		c.e.fail(err)
		return
	}
	if !ok {
		return
	}
	ks := c.e.keys[r.Key]
	if ks == nil {
		if c.e.changed(r.Key) {
			return // emptied since the record was saved
		}
		ks = c.e.restore(r.Key, r)
	}
	ks.timerAt = noTimer // fired: the next save registers the next one
	c.e.touch(r.Key)
}

// InitState implements api.Stateful: under effectively-once the task's
// open windows, accumulators, watermarks and timers are those of the
// checkpoint (none at the first start); after a rollback it replaces
// everything the task held. In the other modes nothing is checkpointed
// and the windows stay in the task's memory. With
// keyed state (a state backend) and inputs grouped by fields, each key's
// windows are keyed state and its timer a keyed event-time timer;
// otherwise, and for global windows and EarlyInterval (which look at
// every key at every tick), the keys are an operator state.
func (b *Bolt[K, IN, ACC, OUT]) InitState(states *api.States) error {
	if !b.eo {
		return nil // no checkpoints: the windows stay in memory
	}
	// Every task sees the same watermarks (they are broadcast), so after
	// a rescale every new task takes an old task's clock.
	clock, err := api.NewState[string, clockRecord](states, ClockState, api.WithRestoreMode(api.UnionRestore))
	if err != nil {
		return fmt.Errorf("window bolt %s: %w", b.comp, err)
	}
	r, ok := clock.Get("")
	if !ok {
		r = clockRecord{Watermark: NoWatermark, Emitted: NoWatermark, Combined: NoWatermark}
	}
	now := b.spec.Now()
	var gens map[int]Generator
	if b.gens != nil {
		gens = map[int]Generator{}
		for task, enc := range r.Generators {
			g := b.spec.Watermark()
			if err := g.UnmarshalBinary(enc); err != nil {
				return fmt.Errorf("window bolt %s: the watermark generator of input task %d: %w", b.comp, task, err)
			}
			gens[task] = g
		}
	}
	b.e.track()
	b.e.reset(r.Watermark, r.Now)
	if states.HasKeyedState() && b.byKey && b.spec.Assigner.kind != kindGlobal && b.spec.EarlyInterval == 0 {
		vs, err := api.NewValueState[keyRecord[K, ACC]](states, KeysState, api.WithSerializer[keyRecord[K, ACC]](newRecordSerializer[K, ACC]()))
		if err != nil {
			return fmt.Errorf("window bolt %s: %w", b.comp, err)
		}
		kk := &keyedKeys[K, IN, ACC, OUT]{states: states, keys: vs, e: b.e}
		states.SetTimerHandler(kk)
		b.e.load, b.e.onAdvance, b.e.evict = kk.load, states.AdvanceWatermark, true
		b.store = kk
	} else {
		keys, err := api.NewState[K, keyRecord[K, ACC]](states, KeysState, api.WithSerializer[keyRecord[K, ACC]](newRecordSerializer[K, ACC]()))
		if err != nil {
			return fmt.Errorf("window bolt %s: %w", b.comp, err)
		}
		keys.Range(func(k K, kr keyRecord[K, ACC]) bool {
			b.e.restore(k, kr)
			return true
		})
		b.store = operatorKeys[K, ACC]{keys: keys}
	}
	b.clock = clock
	if b.tracker != nil {
		b.tracker.Restore(r.Inputs, r.Combined, now)
	}
	if b.gens != nil {
		b.gens = gens
	}
	b.ingest, b.wmOut = r.Ingest, r.Emitted
	return nil
}

// PreSave implements api.Stateful: the keys changed since the last
// checkpoint and the watermarks go into the states.
func (b *Bolt[K, IN, ACC, OUT]) PreSave(int64) error {
	if b.store == nil {
		return errors.New("window bolt: PreSave before InitState")
	}
	if err := b.e.save(b.store); err != nil {
		return fmt.Errorf("window bolt %s: %w", b.comp, err)
	}
	r := clockRecord{Watermark: b.e.wm, Now: b.e.now, Ingest: b.ingest, Emitted: b.wmOut, Combined: NoWatermark}
	if b.tracker != nil {
		r.Inputs, r.Combined = b.tracker.Watermarks()
	}
	if b.gens != nil {
		r.Generators = make(map[int][]byte, len(b.gens))
		for task, g := range b.gens {
			enc, err := g.MarshalBinary()
			if err != nil {
				return fmt.Errorf("window bolt %s: the watermark generator of input task %d: %w", b.comp, task, err)
			}
			r.Generators[task] = enc
		}
	}
	b.clock.Put("", r)
	return nil
}

// effectivelyOnce reports whether the task runs under effectively-once
// delivery.
func effectivelyOnce(ctx api.Context) bool {
	topo := ctx.Topology()
	return topo != nil && topo.DeliveryMode() == topology.EffectivelyOnce
}
