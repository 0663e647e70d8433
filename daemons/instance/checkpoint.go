package instance

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// FrameSender is implemented by a transport that carries effectively-once
// checkpoints: SendFrame queues a complete frame (header included) toward
// the stream manager, in order with the data batches sent before it.
type FrameSender interface {
	SendFrame(ctx context.Context, frame []byte) error
}

// checkpointing is a task's part of effectively-once: it saves the task's
// states at barriers, restores them, and gates processing between a
// restore and the topology manager's StartProcessing.
type checkpointing struct {
	in         *Instance
	send       FrameSender
	stateful   api.Stateful           // nil for a stateless component
	listener   api.CheckpointListener // nil unless implemented
	syncer     api.Syncer             // nil unless implemented
	states     *api.States
	epoch      int64
	processing bool
	// downstream are the tasks of the bolts consuming this component:
	// every one gets this task's barriers.
	downstream []uint32
	maxFrame   int
	buf        []byte
}

func newCheckpointing(in *Instance) (*checkpointing, error) {
	send, ok := in.cfg.Transport.(FrameSender)
	if !ok {
		return nil, errors.New("effectively-once needs the stream manager transport (the in-process runner does not checkpoint; run the topology with egret submit)")
	}
	c := &checkpointing{in: in, send: send, states: api.NewStates(), maxFrame: in.cfg.MaxFrame}
	if c.maxFrame <= 0 {
		c.maxFrame = wire.DefaultMaxFrame
	}
	for _, comp := range in.cfg.Topology.Logical.Consumers(in.comp.Name) {
		for _, t := range in.cfg.Layout.Tasks[comp] {
			c.downstream = append(c.downstream, uint32(t))
		}
	}
	return c, nil
}

// bind records what the component implements (after Open or Prepare).
func (c *checkpointing) bind(component any) {
	c.stateful, _ = component.(api.Stateful)
	c.listener, _ = component.(api.CheckpointListener)
	c.syncer, _ = component.(api.Syncer)
}

// handle acts on a checkpoint message; it reports whether m was one.
func (c *checkpointing) handle(m Msg) bool {
	switch m.Kind {
	case MsgRestore:
		c.restore(m.Checkpoint, m.Epoch, m.State)
	case MsgStartProcessing:
		if m.Epoch == c.epoch {
			c.processing = true
			c.in.log.Info("processing started", zap.Int64("epoch", c.epoch))
		}
	case MsgBarrier:
		if m.Barrier.Epoch == c.epoch && c.processing {
			c.barrier(m.Barrier)
		}
	case MsgCheckpointComplete:
		if m.Epoch == c.epoch && c.listener != nil {
			id := m.Checkpoint
			_ = c.in.call("CheckpointComplete", func() error { c.listener.CheckpointComplete(id); return nil })
		}
	default:
		return false
	}
	return true
}

// restore replaces the task's states with those of checkpoint id (empty
// for 0) and enters epoch, paused until StartProcessing.
func (c *checkpointing) restore(id, epoch int64, blob []byte) {
	c.in.em.flushAll() // what it emitted before belongs to the old epoch
	c.processing = false
	c.epoch = epoch
	err := func() error {
		states, err := api.UnmarshalStates(blob)
		if err != nil {
			return fmt.Errorf("checkpoint %d: %w", id, err)
		}
		c.states = states
		if c.stateful != nil {
			if err := c.in.call("InitState", func() error { return c.stateful.InitState(states) }); err != nil {
				return fmt.Errorf("InitState with checkpoint %d: %w", id, err)
			}
		}
		return nil
	}()
	resp := &egretpb.RestoreInstanceStateResponse{TaskId: int32(c.in.cfg.TaskID), Epoch: epoch}
	if err != nil {
		resp.Error = err.Error()
		c.in.metrics.Errors.Add(1)
		c.in.log.Error("restore failed", zap.Int64("checkpoint", id), zap.Int64("epoch", epoch), zap.Error(err))
	} else {
		c.in.metrics.Restores.Add(1)
		c.in.log.Info("state restored", zap.Int64("checkpoint", id), zap.Int64("epoch", epoch), zap.Int("bytes", len(blob)))
	}
	c.sendMessage(resp)
	if err == nil && id > 0 && c.listener != nil {
		// The checkpoint restored is complete: a two-phase-commit sink
		// finishes what it may not have committed before the failure.
		_ = c.in.call("CheckpointComplete", func() error { c.listener.CheckpointComplete(id); return nil })
	}
}

// barrier saves the task's states as part of checkpoint b.Checkpoint and
// forwards the barrier to every downstream task, after the data emitted
// before it.
func (c *checkpointing) barrier(b wire.Barrier) {
	if c.syncer != nil {
		// A bolt that processes tuples outside Execute (a shell bolt's
		// subprocess) finishes those received before the barrier, so
		// what they emit goes out before the barrier, in this
		// checkpoint.
		_ = c.in.call("Sync", func() error { c.syncer.Sync(); return nil })
	}
	msg := &egretpb.StoreInstanceState{CheckpointId: b.Checkpoint, Epoch: b.Epoch, TaskId: int32(c.in.cfg.TaskID)}
	if b.Flags&wire.BarrierAborted != 0 {
		msg.Error = "barrier alignment timed out in the stream manager (topology.stateful.alignment.timeout)"
	} else if blob, err := c.save(b.Checkpoint); err != nil {
		msg.Error = err.Error()
	} else {
		msg.State = blob
	}
	if msg.Error != "" {
		c.in.metrics.CheckpointFailures.Add(1)
		c.in.log.Warn("checkpoint not saved", zap.Int64("checkpoint", b.Checkpoint), zap.String("reason", msg.Error))
	} else {
		c.in.metrics.Checkpoints.Add(1)
		c.in.metrics.CheckpointBytes.Store(int64(len(msg.State)))
	}
	c.sendMessage(msg)
	c.in.em.flushAll()
	for _, d := range c.downstream {
		c.buf = wire.AppendBarrier(c.buf[:0], wire.Barrier{Dest: d, Src: uint32(c.in.cfg.TaskID), Checkpoint: b.Checkpoint, Epoch: b.Epoch})
		c.sendFrame(c.buf)
	}
}

func (c *checkpointing) save(id int64) ([]byte, error) {
	if c.stateful != nil {
		if err := c.in.call("PreSave", func() error { return c.stateful.PreSave(id) }); err != nil {
			return nil, fmt.Errorf("PreSave(%d): %w", id, err)
		}
	}
	blob, err := c.states.MarshalBinary()
	if err != nil {
		return nil, err
	}
	// The state travels in one frame with a few bytes of envelope.
	if limit := c.maxFrame - 64; len(blob) > limit {
		return nil, fmt.Errorf("the task's state is %d bytes, more than one frame carries (%d; egret.wire.max.frame.bytes)", len(blob), limit)
	}
	return blob, nil
}

func (c *checkpointing) sendMessage(m proto.Message) {
	b, err := wire.AppendMessage(c.buf[:0], m)
	if err != nil {
		c.in.log.Error("encode checkpoint message", zap.Error(err))
		return
	}
	c.buf = b
	c.sendFrame(b)
}

// sendFrame hands a copy of frame to the transport; a failure (the stream
// manager is unreachable) fails this checkpoint or restore, which the
// topology manager notices.
func (c *checkpointing) sendFrame(frame []byte) {
	if err := c.send.SendFrame(c.in.ctx, frame); err != nil {
		c.in.log.Warn("checkpoint frame not sent", zap.Error(err))
	}
}
