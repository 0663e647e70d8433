package wire

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Errors of Queue.Push.
var (
	// ErrQueueFull is returned by a push that would exceed the bound of a
	// non-blocking queue: the caller drops the item and counts it.
	ErrQueueFull = errors.New("queue full")
	// ErrQueueClosed is returned by a push to a closed queue.
	ErrQueueClosed = errors.New("queue closed")
)

// Queue is a FIFO with one consumer, bounded in bytes. It is the queue of
// every connection writer in the data plane: producers push frames or
// batches, one writer goroutine pops them all at once, writes them and
// releases their bytes.
//
// Its bytes count what is queued plus what the consumer popped but has not
// released yet, so a queue holds at most its bound even while its writer is
// busy. An item larger than the bound is admitted when the queue is empty,
// so one oversized item never deadlocks it.
//
// A blocking queue makes a push wait while the queue is full (back
// pressure toward the producer); a non-blocking one fails it with
// ErrQueueFull. A stream manager's queue toward a connection that is down
// is non-blocking: it holds frames up to its bound and drops the rest.
// Nothing in Push, PopAll and Release allocates once the queue's slices
// have grown to their working size.
type Queue[T any] struct {
	size func(T) int
	max  int

	mu       sync.Mutex
	items    []T
	bytes    int
	blocking bool
	closed   bool

	queued atomic.Int64  // mirror of bytes for lock-free readers
	ready  chan struct{} // a token after a push: the consumer wakes
	space  chan struct{} // a token after bytes were released or the mode changed
}

// NewQueue returns an empty blocking queue bounded to maxBytes, measuring
// items with size.
func NewQueue[T any](maxBytes int, size func(T) int) *Queue[T] {
	return &Queue[T]{
		size:     size,
		max:      max(maxBytes, 1),
		items:    CacheLineSlice[T](),
		blocking: true,
		ready:    make(chan struct{}, 1),
		space:    make(chan struct{}, 1),
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Push appends item. On a blocking queue it waits while the queue is full
// and returns ctx's error if ctx ends first; on a non-blocking queue it
// returns ErrQueueFull at once. A waiting push returns ErrQueueFull when
// the queue turns non-blocking.
func (q *Queue[T]) Push(ctx context.Context, item T) error {
	n := q.size(item)
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return ErrQueueClosed
		}
		if q.bytes == 0 || q.bytes+n <= q.max {
			q.appendLocked(item, n)
			more := q.bytes < q.max
			q.mu.Unlock()
			signal(q.ready)
			if more {
				signal(q.space) // pass the wake-up on to another waiting producer
			}
			return nil
		}
		blocking := q.blocking
		q.mu.Unlock()
		if !blocking {
			signal(q.space) // wake the next waiter so it sees the mode too
			return ErrQueueFull
		}
		select {
		case <-q.space:
		case <-ctx.Done():
			signal(q.space)
			return ctx.Err()
		}
	}
}

// PushUnbounded appends item whatever the queue holds: for small control
// messages that must not be dropped. It fails only on a closed queue.
func (q *Queue[T]) PushUnbounded(item T) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrQueueClosed
	}
	q.appendLocked(item, q.size(item))
	q.mu.Unlock()
	signal(q.ready)
	return nil
}

func (q *Queue[T]) appendLocked(item T, n int) {
	q.items = append(q.items, item)
	q.bytes += n
	q.queued.Store(int64(q.bytes))
}

// PopAll moves every queued item to dst and returns it. The items' bytes
// stay counted until the consumer calls Release.
func (q *Queue[T]) PopAll(dst []T) []T {
	q.mu.Lock()
	dst = append(dst, q.items...)
	clear(q.items)
	q.items = q.items[:0]
	q.mu.Unlock()
	return dst
}

// Release returns n bytes of popped items to the queue's budget.
func (q *Queue[T]) Release(n int) {
	if n == 0 {
		return
	}
	q.mu.Lock()
	q.bytes = max(q.bytes-n, 0)
	q.queued.Store(int64(q.bytes))
	q.mu.Unlock()
	signal(q.space)
}

// Ready receives a token after items were pushed (and when the queue is
// closed). A token may be stale: the consumer pops and finds nothing.
func (q *Queue[T]) Ready() <-chan struct{} { return q.ready }

// Signal wakes the consumer as a push would, for a consumer that also
// watches other state.
func (q *Queue[T]) Signal() { signal(q.ready) }

// SetBlocking switches the queue between blocking and dropping pushes.
// Switching to non-blocking makes waiting pushes fail with ErrQueueFull.
func (q *Queue[T]) SetBlocking(blocking bool) {
	q.mu.Lock()
	q.blocking = blocking
	q.mu.Unlock()
	signal(q.space)
}

// SetMax changes the queue's bound. A queue holding more than the new
// bound keeps it: pushes wait (or fail) until it drains below.
func (q *Queue[T]) SetMax(maxBytes int) {
	q.mu.Lock()
	q.max = max(maxBytes, 1)
	q.mu.Unlock()
	signal(q.space)
}

// Bytes is what the queue holds: queued and popped but not released.
func (q *Queue[T]) Bytes() int { return int(q.queued.Load()) }

// Empty reports whether nothing is queued or being written; it does not
// lock.
func (q *Queue[T]) Empty() bool { return q.queued.Load() == 0 }

// Discard removes every queued item, releasing its bytes, and calls fn
// (when not nil) with each.
func (q *Queue[T]) Discard(fn func(T)) {
	q.mu.Lock()
	items := q.items
	n := 0
	for _, it := range items {
		n += q.size(it)
	}
	q.items = CacheLineSlice[T]()
	q.bytes = max(q.bytes-n, 0)
	q.queued.Store(int64(q.bytes))
	q.mu.Unlock()
	signal(q.space)
	if fn != nil {
		for _, it := range items {
			fn(it)
		}
	}
}

// Close closes the queue: pushes fail with ErrQueueClosed from now on.
// What it holds stays for Discard.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	signal(q.space)
	signal(q.ready)
}

// Closed reports whether Close was called.
func (q *Queue[T]) Closed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}
