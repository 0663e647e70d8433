package instance

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/statebackend"
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
// states (Instance.state) at barriers, restores them, and gates processing
// between a restore and the topology manager's StartProcessing.
type checkpointing struct {
	in         *Instance
	send       FrameSender
	listener   api.CheckpointListener // nil unless implemented
	syncer     api.Syncer             // nil unless implemented
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
	c := &checkpointing{in: in, send: send, maxFrame: in.cfg.MaxFrame}
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
		if err := c.restoreState(blob); err != nil {
			return fmt.Errorf("checkpoint %d: %w", id, err)
		}
		if ts := c.in.state; ts != nil {
			if err := ts.initState(); err != nil {
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
// before it. Only the synchronous part of the save runs before the barrier
// goes on: PreSave, the encoding of the operator states and the fork of
// the keyed state's snapshot (constant time on every backend); the
// snapshot is written afterwards.
func (c *checkpointing) barrier(b wire.Barrier) {
	if c.syncer != nil {
		// A bolt that processes tuples outside Execute (a shell bolt's
		// subprocess) finishes those received before the barrier, so
		// what they emit goes out before the barrier, in this
		// checkpoint.
		_ = c.in.call("Sync", func() error { c.syncer.Sync(); return nil })
	}
	msg := &egretpb.StoreInstanceState{CheckpointId: b.Checkpoint, Epoch: b.Epoch, TaskId: int32(c.in.cfg.TaskID)}
	var snap *taskSnapshot
	if b.Flags&wire.BarrierAborted != 0 {
		msg.Error = "barrier alignment timed out in the stream manager (topology.stateful.alignment.timeout)"
	} else {
		start := time.Now()
		var err error
		if snap, err = c.fork(b.Checkpoint); err != nil {
			msg.Error = err.Error()
		}
		c.in.metrics.CheckpointSyncNanos.Store(int64(time.Since(start)))
	}
	c.in.em.flushAll()
	for _, d := range c.downstream {
		c.buf = wire.AppendBarrier(c.buf[:0], wire.Barrier{Dest: d, Src: uint32(c.in.cfg.TaskID), Checkpoint: b.Checkpoint, Epoch: b.Epoch})
		c.sendFrame(c.buf)
	}
	if snap != nil {
		state, err := c.persist(snap)
		if err != nil {
			msg.Error = err.Error()
		}
		msg.State = state
	}
	if msg.Error != "" {
		c.in.metrics.CheckpointFailures.Add(1)
		c.in.log.Warn("checkpoint not saved", zap.Int64("checkpoint", b.Checkpoint), zap.String("reason", msg.Error))
	} else {
		c.in.metrics.Checkpoints.Add(1)
		c.in.metrics.CheckpointBytes.Store(int64(len(msg.State)))
	}
	c.sendMessage(msg)
}

// taskSnapshot is the synchronous part of a task's save: its operator
// states encoded and a fork of its keyed state (nil for a task without
// state).
type taskSnapshot struct {
	checkpoint int64
	operator   []byte
	keyed      statebackend.Snapshot
}

// fork runs PreSave and forks the task's states.
func (c *checkpointing) fork(id int64) (*taskSnapshot, error) {
	ts := c.in.state
	snap := &taskSnapshot{checkpoint: id}
	if ts == nil {
		return snap, nil
	}
	if ts.stateful != nil {
		if err := c.in.call("PreSave", func() error { return ts.stateful.PreSave(id) }); err != nil {
			return nil, fmt.Errorf("PreSave(%d): %w", id, err)
		}
	}
	var err error
	if snap.operator, err = ts.states.MarshalBinary(); err != nil {
		return nil, err
	}
	if snap.keyed, err = ts.backend.Snapshot(); err != nil {
		return nil, fmt.Errorf("fork the keyed state: %w", err)
	}
	return snap, nil
}

// persist writes a forked snapshot where restore finds it again and
// returns what the stream manager stores for the task. For now that is
// the whole state, in one frame:
//
//	blob = "EGT1" len(operator):uvarint operator keyed-snapshot-stream
//
// (empty for a task without state).
func (c *checkpointing) persist(snap *taskSnapshot) ([]byte, error) {
	if snap.keyed == nil {
		return nil, nil
	}
	defer snap.keyed.Release()
	blob := append([]byte(nil), blobMagic...)
	blob = binary.AppendUvarint(blob, uint64(len(snap.operator)))
	blob = append(blob, snap.operator...)
	w := bytes.NewBuffer(blob)
	if _, err := snap.keyed.WriteTo(w); err != nil {
		return nil, fmt.Errorf("write the keyed state: %w", err)
	}
	blob = w.Bytes()
	// The state travels in one frame with a few bytes of envelope.
	if limit := c.maxFrame - 64; len(blob) > limit {
		return nil, fmt.Errorf("the task's state is %d bytes, more than one frame carries (%d; egret.wire.max.frame.bytes)", len(blob), limit)
	}
	return blob, nil
}

var blobMagic = []byte("EGT1")

// restoreState replaces the task's state with the one persist saved in
// blob (none when empty).
func (c *checkpointing) restoreState(blob []byte) error {
	ts := c.in.state
	var operator, keyed []byte
	if len(blob) > 0 {
		if !bytes.HasPrefix(blob, blobMagic) {
			return errors.New("saved state: bad magic")
		}
		rest := blob[len(blobMagic):]
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return errors.New("saved state: truncated operator state")
		}
		operator, keyed = rest[k:k+int(n)], rest[k+int(n):]
		if ts == nil {
			return errors.New("saved state of a component that keeps none now (api.Stateful)")
		}
	}
	if ts == nil {
		return nil
	}
	if err := ts.backend.Clear(); err != nil {
		return fmt.Errorf("clear the keyed state: %w", err)
	}
	if len(keyed) > 0 {
		if err := ts.backend.Restore(bytes.NewReader(keyed)); err != nil {
			return fmt.Errorf("restore the keyed state: %w", err)
		}
	}
	_, err := ts.open(operator)
	return err
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
