package acking

import (
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/egret-stream/egret/daemons/wire"
)

// Errors of Add.
var (
	// ErrFull is returned when the ledger holds its capacity of roots.
	ErrFull = errors.New("acking ledger is full")
	// ErrDuplicate is returned when the root is already pending.
	ErrDuplicate = errors.New("root is already pending")
	// ErrZero is returned for an initial value of 0 (a tree that is
	// complete before it starts).
	ErrZero = errors.New("initial xor of a root must not be 0")
)

// DefaultBuckets is the number of rotating buckets (Heron's default).
const DefaultBuckets = 3

// minSlots is the smallest table; it doubles whenever it is half full.
const minSlots = 64

// Ledger maps roots to their XOR values. It is not safe for concurrent
// use; its owner serializes calls.
//
// The rotating buckets are epochs: each root records the epoch it was
// added in, Rotate advances the epoch and drops the roots added nbuckets
// epochs ago.
//
// The roots live in an open-addressing table with linear probing (at
// most half full, deletion by backward shift, so no tombstones): an
// update finds its root with one hash and usually one cache line and
// changes it in place, where a Go map needs a lookup and a store. A
// pending root never has the value 0 (Add refuses it, an update that
// reaches it removes the root), so 0 marks a free slot.
type Ledger struct {
	slots    []slot
	shift    uint // 64 - log2(len(slots))
	n        int
	epoch    uint32
	nbuckets uint32
	capacity int
}

type slot struct {
	root  wire.Root
	xor   uint64 // 0: free
	epoch uint32
}

// New returns a ledger with nbuckets rotating buckets (at least 2) holding
// at most capacity roots (0: unbounded except by rotation).
func New(nbuckets, capacity int) (*Ledger, error) {
	if nbuckets < 2 {
		return nil, fmt.Errorf("acking: %d buckets; a rotating ledger needs at least 2", nbuckets)
	}
	if capacity < 0 {
		return nil, fmt.Errorf("acking: negative capacity %d", capacity)
	}
	l := &Ledger{nbuckets: uint32(nbuckets), capacity: capacity}
	l.resize(minSlots)
	return l, nil
}

// RotateInterval is how often to call Rotate so that a root stays in the
// ledger at least timeout: a root is dropped by the nbuckets-th rotation
// after it was added, and at least nbuckets-1 full intervals pass first.
func RotateInterval(timeout time.Duration, nbuckets int) time.Duration {
	return timeout / time.Duration(max(nbuckets-1, 1))
}

// Len is the number of pending roots.
func (l *Ledger) Len() int { return l.n }

// home is root's preferred slot (Fibonacci hashing of the task and id).
func (l *Ledger) home(r wire.Root) int {
	return int(((r.ID ^ uint64(r.Task)<<32 ^ uint64(r.Task)) * 0x9e3779b97f4a7c15) >> l.shift)
}

// find returns root's slot index and whether it is there; when it is not,
// the index is the free slot where it would go.
func (l *Ledger) find(r wire.Root) (int, bool) {
	mask := len(l.slots) - 1
	for i := l.home(r); ; i = (i + 1) & mask {
		s := &l.slots[i]
		if s.xor == 0 {
			return i, false
		}
		if s.root == r {
			return i, true
		}
	}
}

// Add registers root (owned by spout task root.Task) with its initial
// value, the XOR of the edge ids of the copies the spout sent.
func (l *Ledger) Add(root wire.Root, xor uint64) error {
	if xor == 0 {
		return ErrZero
	}
	if l.capacity > 0 && l.n >= l.capacity {
		return ErrFull
	}
	i, ok := l.find(root)
	if ok {
		return ErrDuplicate
	}
	l.slots[i] = slot{root: root, xor: xor, epoch: l.epoch}
	l.n++
	if 2*l.n > len(l.slots) {
		l.resize(2 * len(l.slots))
	}
	return nil
}

// Update XORs xor into root's value. It reports whether root was pending
// and whether it completed (its value returned to 0; it is then removed).
func (l *Ledger) Update(root wire.Root, xor uint64) (found, completed bool) {
	i, ok := l.find(root)
	if !ok {
		return false, false
	}
	if l.slots[i].xor ^= xor; l.slots[i].xor == 0 {
		l.removeAt(i)
		return true, true
	}
	return true, false
}

// Remove drops root (a failure) and reports whether it was pending.
func (l *Ledger) Remove(root wire.Root) bool {
	i, ok := l.find(root)
	if ok {
		l.removeAt(i)
	}
	return ok
}

// removeAt frees slot i and moves back the entries after it that would
// otherwise no longer be reachable from their home slot.
func (l *Ledger) removeAt(i int) {
	mask := len(l.slots) - 1
	for j := (i + 1) & mask; l.slots[j].xor != 0; j = (j + 1) & mask {
		// Entry j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		if h := l.home(l.slots[j].root); (j-h)&mask >= (j-i)&mask {
			l.slots[i] = l.slots[j]
			i = j
		}
	}
	l.slots[i] = slot{}
	l.n--
}

// Rotate advances the epoch, drops the roots added nbuckets rotations ago
// and returns how many it dropped. It visits every pending root and
// rebuilds the table at the size the survivors need; it runs once per
// rotation interval (a fraction of the message timeout).
func (l *Ledger) Rotate() int {
	l.epoch++
	kept := 0
	for i := range l.slots {
		if s := &l.slots[i]; s.xor != 0 && l.epoch-s.epoch < l.nbuckets {
			kept++
		}
	}
	before := l.n
	l.resize(max(minSlots, 1<<bits.Len(uint(2*kept))))
	return before - l.n
}

// resize replaces the table by one of n slots (a power of two) and moves
// into it the roots younger than nbuckets epochs.
func (l *Ledger) resize(n int) {
	old := l.slots
	l.slots = make([]slot, n)
	l.shift = uint(64 - bits.TrailingZeros(uint(n)))
	l.n = 0
	l.insertAll(old)
}

// insertAll inserts the pending roots of old that are younger than
// nbuckets epochs.
func (l *Ledger) insertAll(old []slot) {
	mask := len(l.slots) - 1
	for _, s := range old {
		if s.xor == 0 || l.epoch-s.epoch >= l.nbuckets {
			continue
		}
		i := l.home(s.root)
		for l.slots[i].xor != 0 {
			i = (i + 1) & mask
		}
		l.slots[i] = s
		l.n++
	}
}
