package acking

import (
	"context"
	"sync"

	"github.com/egret-stream/egret/daemons/wire"
)

// Acker is the ledger of one spout task together with the results waiting
// to be delivered to it. It is safe for concurrent use: the goroutines
// that read acking frames apply updates, one deliverer takes the results.
// Results are queued rather than handed to the spout by the goroutine that
// completes a root, which must never block on a spout that is itself
// blocked sending; the queue is bounded by the ledger (each root yields
// one result) and by the spout's max.spout.pending.
type Acker struct {
	mu      sync.Mutex
	ledger  *Ledger
	results []wire.AckResult
	ready   chan struct{}
	stats   AckerStats
}

// AckerStats counts what an Acker did.
type AckerStats struct {
	Registered int64 // roots added by FrameAckInit
	Acked      int64 // roots completed
	Failed     int64 // roots failed (FrameFail, or refused at registration)
	Refused    int64 // registrations refused (ledger full, duplicate, zero)
	Unknown    int64 // updates for roots not in the ledger (late, or rotated out)
	Expired    int64 // roots dropped by rotation
	Pending    int64 // roots in the ledger now
}

// NewAcker returns an acker whose ledger has nbuckets rotating buckets and
// holds at most capacity roots (0: bounded only by rotation).
func NewAcker(nbuckets, capacity int) (*Acker, error) {
	l, err := New(nbuckets, capacity)
	if err != nil {
		return nil, err
	}
	return &Acker{ledger: l, ready: make(chan struct{}, 1)}, nil
}

// Apply applies updates of kind (wire.FrameAckInit, wire.FrameAck or
// wire.FrameFail) to the ledger. A registration the ledger refuses fails
// its root at once, so the spout replays it instead of waiting for its
// timeout. Updates of another kind are ignored.
func (a *Acker) Apply(kind wire.FrameType, updates []wire.AckUpdate) {
	a.mu.Lock()
	n := len(a.results)
	for _, u := range updates {
		a.apply(kind, u)
	}
	more := len(a.results) > n
	a.mu.Unlock()
	if more {
		select {
		case a.ready <- struct{}{}:
		default:
		}
	}
}

func (a *Acker) apply(kind wire.FrameType, u wire.AckUpdate) {
	switch kind {
	case wire.FrameAckInit:
		if err := a.ledger.Add(u.Root, u.Xor); err != nil {
			a.stats.Refused++
			a.stats.Failed++
			a.results = append(a.results, wire.AckResult{Root: u.Root})
			return
		}
		a.stats.Registered++
	case wire.FrameAck:
		found, done := a.ledger.Update(u.Root, u.Xor)
		switch {
		case !found:
			a.stats.Unknown++
		case done:
			a.stats.Acked++
			a.results = append(a.results, wire.AckResult{Root: u.Root, Acked: true})
		}
	case wire.FrameFail:
		if a.ledger.Remove(u.Root) {
			a.stats.Failed++
			a.results = append(a.results, wire.AckResult{Root: u.Root})
		} else {
			a.stats.Unknown++
		}
	}
}

// take returns the waiting results and keeps spare (emptied) as the
// buffer for the next ones.
func (a *Acker) take(spare []wire.AckResult) []wire.AckResult {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.results
	a.results = spare[:0]
	return out
}

// Deliver hands the results to send, batch by batch, until ctx ends or
// send fails. send owns a batch until it returns (the slice is reused
// for the next results).
func (a *Acker) Deliver(ctx context.Context, send func([]wire.AckResult) error) error {
	var spare []wire.AckResult
	for {
		select {
		case <-a.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
		batch := a.take(spare)
		if len(batch) > 0 {
			if err := send(batch); err != nil {
				return err
			}
		}
		spare = batch[:0]
	}
}

// Rotate rotates the ledger (see Ledger.Rotate) and returns how many
// roots it dropped.
func (a *Acker) Rotate() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.ledger.Rotate()
	a.stats.Expired += int64(n)
	return n
}

// Stats returns a snapshot of the acker's counters.
func (a *Acker) Stats() AckerStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.stats
	s.Pending = int64(a.ledger.Len())
	return s
}
