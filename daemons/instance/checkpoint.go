package instance

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/daemons/ckptio"
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
	// up writes the task's checkpoints to the container's checkpoint
	// manager and reads them back (upload.go).
	up  *uploads
	buf []byte
}

func newCheckpointing(in *Instance) (*checkpointing, error) {
	send, ok := in.cfg.Transport.(FrameSender)
	if !ok {
		return nil, errors.New("effectively-once needs the stream manager transport (the in-process runner does not checkpoint; run the topology with egret submit)")
	}
	if in.cfg.CkptMgrSocket == "" {
		return nil, errors.New("effectively-once needs the checkpoint manager's socket (instance Config.CkptMgrSocket; the executor passes --ckptmgr-socket)")
	}
	up, err := newUploads(in)
	if err != nil {
		return nil, err
	}
	c := &checkpointing{in: in, send: send, up: up}
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
		c.restore(m.Checkpoint, m.Epoch, m.State, m.OldTasks)
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
// for 0) and enters epoch, paused until StartProcessing. blob is the
// task's manifest; old, when set, the tasks of its component at the
// checkpoint, which was taken with another parallelism.
func (c *checkpointing) restore(id, epoch int64, blob []byte, old []int32) {
	c.in.em.flushAll() // what it emitted before belongs to the old epoch
	c.processing = false
	c.epoch = epoch
	err := func() error {
		restore := func() error { return c.restoreState(blob) }
		if len(old) > 0 {
			restore = func() error { return c.restoreRescaled(id, old) }
		}
		if err := restore(); err != nil {
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
		c.in.log.Info("state restored", zap.Int64("checkpoint", id), zap.Int64("epoch", epoch), zap.Int("bytes", len(blob)), zap.Int32s("old_tasks", old))
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
// before it. Only the synchronous part of the save runs on the task's
// goroutine before the barrier goes on: PreSave, the encoding of the
// operator states and the fork of the keyed state (a snapshot, or an
// incremental checkpoint of the backend); the fork is then uploaded in the
// background (upload.go), and StoreInstanceState, with the manifest of
// what was uploaded, is sent when it is done.
func (c *checkpointing) barrier(b wire.Barrier) {
	if c.syncer != nil {
		// A bolt that processes tuples outside Execute (a shell bolt's
		// subprocess) finishes those received before the barrier, so
		// what they emit goes out before the barrier, in this
		// checkpoint.
		_ = c.in.call("Sync", func() error { c.syncer.Sync(); return nil })
	}
	msg := &egretpb.StoreInstanceState{CheckpointId: b.Checkpoint, Epoch: b.Epoch, TaskId: int32(c.in.cfg.TaskID)}
	var snap ckptio.TaskSnapshot
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
	if msg.Error != "" {
		c.stored(msg, nil)
		return
	}
	c.up.upload(snap, func(manifest []byte, err error) { c.stored(msg, err, manifest...) })
}

// stored reports the save of a checkpoint to the stream manager: its
// manifest, or why it failed. It runs on the task's goroutine or on the
// upload goroutine, so it encodes into a buffer of its own.
func (c *checkpointing) stored(msg *egretpb.StoreInstanceState, err error, manifest ...byte) {
	if err != nil {
		msg.Error = err.Error()
	}
	if msg.Error != "" {
		c.in.metrics.CheckpointFailures.Add(1)
		c.in.log.Warn("checkpoint not saved", zap.Int64("checkpoint", msg.CheckpointId), zap.String("reason", msg.Error))
	} else {
		msg.State = manifest
		c.in.metrics.Checkpoints.Add(1)
		c.in.metrics.CheckpointBytes.Store(int64(len(manifest)))
	}
	frame, err := wire.AppendMessage(nil, msg)
	if err != nil {
		c.in.log.Error("encode checkpoint message", zap.Error(err))
		return
	}
	c.sendFrame(frame)
}

// fork runs PreSave and forks the task's states: the synchronous part of
// its save.
func (c *checkpointing) fork(id int64) (ckptio.TaskSnapshot, error) {
	ts := c.in.state
	if ts == nil {
		return c.up.fork(id, nil, nil, "", 0, keygroup.Range{})
	}
	if ts.stateful != nil {
		if err := c.in.call("PreSave", func() error { return ts.stateful.PreSave(id) }); err != nil {
			return ckptio.TaskSnapshot{}, fmt.Errorf("PreSave(%d): %w", id, err)
		}
	}
	operator, err := ts.states.MarshalBinary()
	if err != nil {
		return ckptio.TaskSnapshot{}, err
	}
	snap, err := c.up.fork(id, operator, ts.backend, ts.name, ts.opts.MaxParallelism, ts.opts.Groups)
	if err != nil {
		return snap, fmt.Errorf("fork the keyed state: %w", err)
	}
	return snap, nil
}

// restoreState replaces the task's state with the checkpoint whose
// manifest is blob (empty: no checkpoint, empty state).
func (c *checkpointing) restoreState(blob []byte) error {
	ts := c.in.state
	if ts == nil {
		_, err := c.up.restore(blob, nil, keygroup.Range{}, "")
		return err
	}
	if err := ts.backend.Clear(); err != nil {
		return fmt.Errorf("clear the keyed state: %w", err)
	}
	if c.in.cfg.StateDir != "" {
		// The instance's state directory outlives its process: local
		// copies of the checkpoint files there make a restore of a
		// restarted task read its disk, not the checkpoint storage.
		if err := c.up.up.KeepLocalCopies(ts.opts.Dir + ".local"); err != nil {
			return err
		}
	}
	operator, err := c.up.restore(blob, ts.backend, ts.opts.Groups, filepath.Dir(ts.opts.Dir))
	if err != nil {
		return err
	}
	_, err = ts.open(operator)
	return err
}

// restoreRescaled replaces the task's state with its share of checkpoint
// id, taken when its component had the tasks old: the keyed state (and
// timers) of its key groups, read from every old task that held one, and
// its part of the old tasks' operator states by each state's restore mode
// (api.RedistributeStates).
func (c *checkpointing) restoreRescaled(id int64, old []int32) error {
	ts := c.in.state
	if ts == nil {
		return nil // a stateless task: its old tasks' checkpoints hold nothing
	}
	// The task's index among its component's tasks by ascending id, as
	// its key groups (newTaskState).
	tasks := c.in.cfg.Layout.Tasks[c.in.comp.Name]
	index := slices.Index(tasks, c.in.cfg.TaskID)
	if err := ts.backend.Clear(); err != nil {
		return fmt.Errorf("clear the keyed state: %w", err)
	}
	ops, err := c.up.restoreRescaled(id, old, ts.backend, ts.opts.MaxParallelism, ts.opts.Groups, filepath.Dir(ts.opts.Dir))
	if err != nil {
		return err
	}
	var olds [][]byte
	for _, op := range ops {
		if op != nil {
			olds = append(olds, op)
		}
	}
	var operator []byte
	if len(olds) > 0 {
		if operator, err = api.RedistributeStates(olds, index, len(tasks)); err != nil {
			return fmt.Errorf("redistribute the operator states of tasks %v over %d tasks: %w", old, len(tasks), err)
		}
	}
	_, err = ts.open(operator)
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
