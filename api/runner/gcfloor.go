package runner

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultHeapFloor is the heap growth an instance process allows between
// two collections when GOGC is not set: the collector runs when the heap
// reaches live + max(live, DefaultHeapFloor) (GOGC=100 would be 2 × live).
//
// An instance allocates for every tuple it receives (the values and the
// tuple a bolt may keep) and usually keeps only a few MiB live, so with
// GOGC=100 it collected every few MiB: dozens of cycles a second, the GC
// and its write barriers a fifth of its CPU. The floor makes cycles rare
// while the heap is small and changes nothing once live data exceeds it.
// It costs up to this much more memory per instance
// (docs/backpressure.md, "Memory bound"); a GOMEMLIMIT still caps the
// heap, and setting GOGC turns the floor off.
const DefaultHeapFloor = 16 << 20

// maxFloorPercent bounds the GC percent the floor sets (a nearly empty
// heap would otherwise ask for an absurd value).
const maxFloorPercent = 10000

// heapFloor keeps a GC percent such that a collection lets the heap grow
// by at least floor bytes over what the last one left live. The runtime's
// heap goal is live + (live + stacks + globals) × percent / 100, so after
// every cycle (from a finalizer, which runs once per cycle) it reads those
// three and sets the percent to max(base, 100 × floor / their sum).
type heapFloor struct {
	floor uint64
	base  int // the GC percent without a floor (GOGC, 100 by default)

	mu      sync.Mutex
	stopped bool
	percent int
	samples [3]metrics.Sample // live heap, stacks and globals scanned
}

// startHeapFloor installs a heap floor of floor bytes over the process's
// current GC percent, unless GOGC is set in the environment (the user's
// setting wins) or the GC is off; it returns a function that removes it
// and restores the percent.
func startHeapFloor(floor uint64) (stop func()) {
	if os.Getenv("GOGC") != "" || floor == 0 {
		return func() {}
	}
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if base <= 0 {
		return func() {}
	}
	h := &heapFloor{floor: floor, base: base, percent: base}
	h.samples[0].Name = "/gc/heap/live:bytes"
	h.samples[1].Name = "/gc/scan/stack:bytes"
	h.samples[2].Name = "/gc/scan/globals:bytes"
	h.arm()
	return h.stop
}

// gcSentinel is an object nobody references: its finalizer runs after
// every collection and re-arms itself.
type gcSentinel struct {
	h *heapFloor
	_ [16]byte // not a tiny allocation: tiny objects share blocks and die late
}

func (h *heapFloor) arm() {
	runtime.SetFinalizer(&gcSentinel{h: h}, afterGC)
}

func afterGC(s *gcSentinel) {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	h.adjust()
	runtime.SetFinalizer(s, afterGC)
}

// adjust sets the GC percent for the live heap the last cycle measured.
// Called with h.mu held.
func (h *heapFloor) adjust() {
	metrics.Read(h.samples[:])
	var roots uint64 // what the percent applies to
	for _, s := range h.samples {
		if s.Value.Kind() != metrics.KindUint64 {
			return
		}
		roots += s.Value.Uint64()
	}
	want := floorPercent(roots, h.floor, h.base)
	// Small changes are not worth a call (it takes the heap lock).
	if want != h.percent && (want > h.percent+h.percent/16 || want < h.percent-h.percent/16 || want == h.base) {
		h.percent = want
		debug.SetGCPercent(want)
	}
}

// floorPercent is the GC percent that makes the heap grow by floor over
// the live heap before the next cycle, roots being the live heap plus the
// stacks and globals the runtime scans: max(base, 100 × floor / roots), at
// most maxFloorPercent.
func floorPercent(roots, floor uint64, base int) int {
	if roots == 0 {
		return base // no cycle measured yet
	}
	p := floor * 100 / roots
	if p > maxFloorPercent {
		p = maxFloorPercent
	}
	return max(base, int(p))
}

func (h *heapFloor) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	h.stopped = true
	debug.SetGCPercent(h.base)
}
