package inproc

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/egret-stream/egret/daemons/acking"
	"github.com/egret-stream/egret/daemons/instance"
	"github.com/egret-stream/egret/daemons/wire"
)

// acker is the in-memory router's XOR ledger of one spout task and the
// results waiting to be delivered to it. Results are queued rather than
// sent to the spout's inbox by the acking task, which must never block on
// a spout that is itself blocked sending to that task; the queue is
// bounded by the ledger (each root yields one result).
type acker struct {
	mu      sync.Mutex
	ledger  *acking.Ledger
	results []wire.AckResult
	notify  chan struct{}
}

func (a *acker) apply(kind wire.FrameType, u wire.AckUpdate) {
	switch kind {
	case wire.FrameAckInit:
		if err := a.ledger.Add(u.Root, u.Xor); err != nil {
			a.results = append(a.results, wire.AckResult{Root: u.Root})
		}
	case wire.FrameAck:
		if _, done := a.ledger.Update(u.Root, u.Xor); done {
			a.results = append(a.results, wire.AckResult{Root: u.Root, Acked: true})
		}
	case wire.FrameFail:
		if a.ledger.Remove(u.Root) {
			a.results = append(a.results, wire.AckResult{Root: u.Root})
		}
	}
}

// SendAcks applies the updates to their spout tasks' ledgers at once.
func (t *transport) SendAcks(_ context.Context, kind wire.FrameType, updates []wire.AckUpdate) error {
	if t.r.ackers == nil {
		return fmt.Errorf("topology %q is not at-least-once: no ledger for acking updates", t.r.topo.Logical.Name)
	}
	if kind != wire.FrameAckInit && kind != wire.FrameAck && kind != wire.FrameFail {
		return fmt.Errorf("frame type %s is not an acking update", kind)
	}
	var cur *acker
	for _, u := range updates {
		var a *acker
		if int(u.Root.Task) < len(t.r.ackers) {
			a = t.r.ackers[u.Root.Task]
		}
		if a == nil {
			continue // not a spout task: a corrupt root, ignored
		}
		if a != cur {
			if cur != nil {
				cur.release()
			}
			a.mu.Lock()
			cur = a
		}
		a.apply(kind, u)
	}
	if cur != nil {
		cur.release()
	}
	return nil
}

// release unlocks a and wakes its deliverer when results wait.
func (a *acker) release() {
	n := len(a.results)
	a.mu.Unlock()
	if n > 0 {
		select {
		case a.notify <- struct{}{}:
		default:
		}
	}
}

// deliver moves the results of spout task id into its inbox until ctx
// ends.
func (r *Runner) deliver(ctx context.Context, id int, a *acker) {
	var spare []wire.AckResult
	for {
		select {
		case <-a.notify:
		case <-ctx.Done():
			return
		}
		a.mu.Lock()
		batch := a.results
		a.results = spare[:0]
		a.mu.Unlock()
		if len(batch) == 0 {
			spare = batch
			continue
		}
		done := make(chan struct{})
		select {
		case r.inboxes[id] <- instance.Msg{Kind: instance.MsgAckResults, Acks: batch, Handled: func() { close(done) }}:
		case <-ctx.Done():
			return
		}
		// The spout is done with batch once it handled the message.
		select {
		case <-done:
			spare = batch
		case <-ctx.Done():
			return
		}
	}
}

// rotate rotates the ledgers so that roots nobody acks or fails (their
// spout already timed them out) do not stay in memory.
func (r *Runner) rotate(ctx context.Context) {
	if r.timeout <= 0 {
		return
	}
	t := time.NewTicker(acking.RotateInterval(r.timeout, acking.DefaultBuckets))
	defer t.Stop()
	for {
		select {
		case <-t.C:
			for _, a := range r.ackers {
				if a != nil {
					a.mu.Lock()
					a.ledger.Rotate()
					a.mu.Unlock()
				}
			}
		case <-ctx.Done():
			return
		}
	}
}
