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
type Ledger struct {
	buckets  []map[wire.Root]uint64 // buckets[0] is the newest
	n        int
	capacity int
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
	l := &Ledger{buckets: make([]map[wire.Root]uint64, nbuckets), capacity: capacity}
	for i := range l.buckets {
		l.buckets[i] = map[wire.Root]uint64{}
	}
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

// Add registers root (owned by spout task root.Task) with its initial
// value, the XOR of the edge ids of the copies the spout sent.
func (l *Ledger) Add(root wire.Root, xor uint64) error {
	if xor == 0 {
		return ErrZero
	}
	if l.capacity > 0 && l.n >= l.capacity {
		return ErrFull
	}
	if l.find(root) >= 0 {
		return ErrDuplicate
	}
	l.buckets[0][root] = xor
	l.n++
	return nil
}

// find returns the index of the bucket holding root, or -1.
func (l *Ledger) find(root wire.Root) int {
	for i, b := range l.buckets {
		if _, ok := b[root]; ok {
			return i
		}
	}
	return -1
}

// Update XORs xor into root's value. It reports whether root was pending
// and whether it completed (its value returned to 0; it is then removed).
func (l *Ledger) Update(root wire.Root, xor uint64) (found, completed bool) {
	for _, b := range l.buckets {
		v, ok := b[root]
		if !ok {
			continue
		}
		v ^= xor
		if v == 0 {
			delete(b, root)
			l.n--
			return true, true
		}
		b[root] = v
		return true, false
	}
	return false, false
}

// Remove drops root (a failure) and reports whether it was pending.
func (l *Ledger) Remove(root wire.Root) bool {
	for _, b := range l.buckets {
		if _, ok := b[root]; ok {
			delete(b, root)
			l.n--
			return true
		}
	}
	return false
}

// Rotate drops the roots of the oldest bucket, makes it the newest, and
// returns how many roots it dropped. The bucket's memory is reused.
func (l *Ledger) Rotate() int {
	last := len(l.buckets) - 1
	old := l.buckets[last]
	dropped := len(old)
	clear(old)
	copy(l.buckets[1:], l.buckets[:last])
	l.buckets[0] = old
	l.n -= dropped
	return dropped
}
