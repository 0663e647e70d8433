package acking

import (
	"errors"
	"fmt"
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

// Ledger maps roots to their XOR values. It is not safe for concurrent
// use; its owner serializes calls.
//
// The rotating buckets are epochs: each root records the epoch it was
// added in, Rotate advances the epoch and drops the roots added nbuckets
// epochs ago. One map keyed by a 64-bit mix of the root keeps Add, Update
// and Remove at a single fast lookup each.
type Ledger struct {
	m        map[uint64]entry
	epoch    uint32
	nbuckets uint32
	capacity int
}

type entry struct {
	root  wire.Root
	xor   uint64
	epoch uint32
}

// key mixes a root into a map key. Two roots with the same key cannot
// both be pending: the second is refused as a duplicate (its spout
// replays it), so a collision costs a replay, never a wrong ack.
func key(r wire.Root) uint64 { return r.ID ^ uint64(r.Task)*0x9e3779b97f4a7c15 }

// New returns a ledger with nbuckets rotating buckets (at least 2) holding
// at most capacity roots (0: unbounded except by rotation).
func New(nbuckets, capacity int) (*Ledger, error) {
	if nbuckets < 2 {
		return nil, fmt.Errorf("acking: %d buckets; a rotating ledger needs at least 2", nbuckets)
	}
	if capacity < 0 {
		return nil, fmt.Errorf("acking: negative capacity %d", capacity)
	}
	return &Ledger{m: map[uint64]entry{}, nbuckets: uint32(nbuckets), capacity: capacity}, nil
}

// RotateInterval is how often to call Rotate so that a root stays in the
// ledger at least timeout: a root is dropped by the nbuckets-th rotation
// after it was added, and at least nbuckets-1 full intervals pass first.
func RotateInterval(timeout time.Duration, nbuckets int) time.Duration {
	return timeout / time.Duration(max(nbuckets-1, 1))
}

// Len is the number of pending roots.
func (l *Ledger) Len() int { return len(l.m) }

// Add registers root (owned by spout task root.Task) with its initial
// value, the XOR of the edge ids of the copies the spout sent.
func (l *Ledger) Add(root wire.Root, xor uint64) error {
	if xor == 0 {
		return ErrZero
	}
	if l.capacity > 0 && len(l.m) >= l.capacity {
		return ErrFull
	}
	k := key(root)
	if _, ok := l.m[k]; ok {
		return ErrDuplicate
	}
	l.m[k] = entry{root: root, xor: xor, epoch: l.epoch}
	return nil
}

// Update XORs xor into root's value. It reports whether root was pending
// and whether it completed (its value returned to 0; it is then removed).
func (l *Ledger) Update(root wire.Root, xor uint64) (found, completed bool) {
	k := key(root)
	e, ok := l.m[k]
	if !ok || e.root != root {
		return false, false
	}
	if e.xor ^= xor; e.xor == 0 {
		delete(l.m, k)
		return true, true
	}
	l.m[k] = e
	return true, false
}

// Remove drops root (a failure) and reports whether it was pending.
func (l *Ledger) Remove(root wire.Root) bool {
	k := key(root)
	if e, ok := l.m[k]; !ok || e.root != root {
		return false
	}
	delete(l.m, k)
	return true
}

// Rotate advances the epoch, drops the roots added nbuckets rotations ago
// and returns how many it dropped. It visits every pending root; it runs
// once per rotation interval (a fraction of the message timeout).
func (l *Ledger) Rotate() int {
	l.epoch++
	dropped := 0
	for k, e := range l.m {
		if l.epoch-e.epoch >= l.nbuckets {
			delete(l.m, k)
			dropped++
		}
	}
	return dropped
}
