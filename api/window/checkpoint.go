package window

import (
	"container/heap"
	"errors"
	"fmt"
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

// keyRecord is the checkpointed form of one key: its open windows in
// ascending order and, for count windows, the elements it has seen.
type keyRecord[ACC any] struct {
	N    int64
	Wins []winRecord[ACC]
}

// keyStore is where a checkpointed engine keeps its keys between saves.
type keyStore[K comparable, ACC any] interface {
	put(k K, r keyRecord[ACC]) error
	delete(k K) error
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

// record returns the checkpointed form of key k, false when it holds
// nothing.
func (e *engine[K, IN, ACC, OUT]) record(k K) (keyRecord[ACC], bool) {
	ks := e.keys[k]
	if ks == nil {
		return keyRecord[ACC]{}, false
	}
	r := keyRecord[ACC]{N: ks.n, Wins: make([]winRecord[ACC], 0, len(ks.wins))}
	for w, st := range ks.wins {
		r.Wins = append(r.Wins, winRecord[ACC]{Start: w.Start, End: w.End, Acc: st.acc, Count: st.count,
			SinceEmit: st.sinceEmit, LastEmit: st.lastEmit, Fired: st.fired, First: st.first, Last: st.last})
	}
	sort.Slice(r.Wins, func(i, j int) bool {
		a, b := r.Wins[i], r.Wins[j]
		return a.Start < b.Start || a.Start == b.Start && a.End < b.End
	})
	return r, true
}

// save writes every key changed since the last save to s (deleting the
// keys that hold nothing any more).
func (e *engine[K, IN, ACC, OUT]) save(s keyStore[K, ACC]) error {
	for k := range e.dirty {
		var err error
		if r, ok := e.record(k); ok {
			err = s.put(k, r)
		} else {
			err = s.delete(k)
		}
		if err != nil {
			return err
		}
		delete(e.dirty, k)
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
	if e.dirty != nil {
		clear(e.dirty)
	}
}

// restore puts back a key saved by save, with the timers of its windows.
func (e *engine[K, IN, ACC, OUT]) restore(k K, r keyRecord[ACC]) {
	ks := &keyState[ACC]{wins: make(map[Window]*winState[ACC], len(r.Wins)), n: r.N}
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
		ref := &timerRef[K]{key: k, w: w}
		if !st.fired {
			t := &timer{at: w.MaxTimestamp(), ref: ref}
			heap.Push(&e.timers, t)
			st.timers = append(st.timers, t)
		}
		if e.cfg.lateness > 0 {
			t := &timer{at: w.MaxTimestamp() + e.cfg.lateness, purge: true, ref: ref}
			heap.Push(&e.timers, t)
			st.timers = append(st.timers, t)
		}
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

// boltCheckpoint is what a checkpointed window bolt task binds.
type boltCheckpoint[K comparable, ACC any] struct {
	keys  *api.State[K, keyRecord[ACC]]
	clock *api.State[string, clockRecord]
}

func (c *boltCheckpoint[K, ACC]) put(k K, r keyRecord[ACC]) error { c.keys.Put(k, r); return nil }
func (c *boltCheckpoint[K, ACC]) delete(k K) error                { c.keys.Delete(k); return nil }

// InitState implements api.Stateful: the task's open windows,
// accumulators, watermarks and timers are those of the checkpoint (none
// at the first start). The runtime calls it in effectively-once mode
// only; after a rollback it replaces everything the task held.
func (b *Bolt[K, IN, ACC, OUT]) InitState(states *api.States) error {
	keys, err := api.NewState[K, keyRecord[ACC]](states, KeysState)
	if err != nil {
		return fmt.Errorf("window bolt %s: %w", b.comp, err)
	}
	clock, err := api.NewState[string, clockRecord](states, ClockState)
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
	b.ckpt = &boltCheckpoint[K, ACC]{keys: keys, clock: clock}
	b.e.track()
	b.e.reset(r.Watermark, r.Now)
	keys.Range(func(k K, kr keyRecord[ACC]) bool {
		b.e.restore(k, kr)
		return true
	})
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
	if b.ckpt == nil {
		return errors.New("window bolt: PreSave before InitState")
	}
	if err := b.e.save(b.ckpt); err != nil {
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
	b.ckpt.clock.Put("", r)
	return nil
}

// effectivelyOnce reports whether the task runs under effectively-once
// delivery.
func effectivelyOnce(ctx api.Context) bool {
	topo := ctx.Topology()
	return topo != nil && topo.DeliveryMode() == topology.EffectivelyOnce
}
