package inproc

import (
	"context"
	"fmt"
	"time"

	"github.com/egret-stream/egret/daemons/acking"
	"github.com/egret-stream/egret/daemons/instance"
	"github.com/egret-stream/egret/daemons/wire"
)

// SendAcks applies the updates to their spout tasks' ledgers at once.
func (t *transport) SendAcks(_ context.Context, kind wire.FrameType, updates []wire.AckUpdate) error {
	if t.r.ackers == nil {
		return fmt.Errorf("topology %q is not at-least-once: no ledger for acking updates", t.r.topo.Logical.Name)
	}
	if kind != wire.FrameAckInit && kind != wire.FrameAck && kind != wire.FrameFail {
		return fmt.Errorf("frame type %s is not an acking update", kind)
	}
	for start := 0; start < len(updates); {
		// Apply runs of updates of the same spout task under one lock.
		task := updates[start].Root.Task
		end := start + 1
		for end < len(updates) && updates[end].Root.Task == task {
			end++
		}
		if int(task) < len(t.r.ackers) && t.r.ackers[task] != nil {
			t.r.ackers[task].Apply(kind, updates[start:end])
		} // else not a spout task: a corrupt root, ignored
		start = end
	}
	return nil
}

// deliver moves the results of spout task id into its inbox until ctx
// ends.
func (r *Runner) deliver(ctx context.Context, id int, a *acking.Acker) {
	_ = a.Deliver(ctx, func(batch []wire.AckResult) error {
		done := make(chan struct{})
		select {
		case r.inboxes[id] <- instance.Msg{Kind: instance.MsgAckResults, Acks: batch, Handled: func() { close(done) }}:
		case <-ctx.Done():
			return ctx.Err()
		}
		// The spout is done with batch once it handled the message.
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
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
					a.Rotate()
				}
			}
		case <-ctx.Done():
			return
		}
	}
}
