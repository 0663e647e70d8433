package stmgr

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// The stream manager's part of effectively-once (DESIGN.md §6,
// docs/protocol.md "Checkpoints"):
//
//   - It injects the topology manager's StartCheckpoint as a barrier into
//     the queue of each local spout task.
//   - It aligns barriers per local task: once the barrier of checkpoint c
//     arrived from an upstream task, that task's later frames are held
//     until the barrier arrived from every upstream task; then the barrier
//     goes to the task (which saves its state and forwards it) followed by
//     what was held. An alignment that takes longer than
//     topology.stateful.alignment.timeout, or holds more than a queue's
//     bound, is aborted: the task gets the barrier flagged aborted (it
//     reports the failure and forwards it) and the held frames.
//   - It forwards each task's saved state to the checkpoint manager and
//     reports the result to the topology manager.
//   - It fences recovery epochs: every frame is stamped with the epoch of
//     the connection it was read on (an instance's: the epoch it last
//     restored; a peer's: its hello and FrameEpoch markers), and frames of
//     an older epoch than the current one are dropped before they reach a
//     task or a peer. A restore empties the queues, marks every peer
//     connection with the new epoch and restores each local task from the
//     checkpoint manager.

// Effectively-once metrics of a stream manager (docs/delivery.md).
const (
	MetricCheckpointEpoch             = "stmgr.checkpoint.epoch"
	MetricCheckpointAlignmentsAborted = "stmgr.checkpoint.alignments.aborted"
	MetricCheckpointFramesFenced      = "stmgr.checkpoint.frames.fenced"
	MetricCheckpointTuplesHeld        = "stmgr.checkpoint.tuples.held"
	MetricCheckpointStatesStored      = "stmgr.checkpoint.states.stored"
	MetricCheckpointStoreFailures     = "stmgr.checkpoint.store.failures"
	MetricCheckpointRestores          = "stmgr.checkpoint.restores"
)

// aligner is the barrier alignment state of one local task. mu also
// orders every push into the task's queue in effectively-once mode, so
// that a restore or an alignment never interleaves with a delivery.
type aligner struct {
	mu       sync.Mutex
	epoch    int64
	upstream map[uint32]bool // tasks whose barriers the task aligns
	ckpt     int64           // checkpoint of the last barrier seen
	aligning bool
	arrived  map[uint32]bool
	started  time.Time
	held     []*frame
	heldSize int
	// alignedCkpt is the last checkpoint whose alignment ended, after
	// alignedIn (reported with the task's state).
	alignedCkpt int64
	alignedIn   time.Duration
	// restored is the epoch whose restore the task acknowledged.
	restored int64
	// component is the task's component in the current plan.
	component string
}

// eoState is the stream manager's effectively-once state.
type eoState struct {
	on           atomic.Bool  // the topology is effectively-once
	epoch        atomic.Int64 // current recovery epoch
	alignTimeout atomic.Int64 // ns

	mu        sync.Mutex
	restoreID int64 // checkpoint of the current epoch's restore
	responded bool  // the current epoch's restore response was sent
	// everConnected records the tasks that had an instance connected:
	// a second connection of one is a failure to recover from.
	everConnected map[int32]bool

	tmOut chan []byte // frames for the topology manager
	ckpt  *ckptClient

	aborted, fenced, held atomic.Int64
	stored, storeFailed   atomic.Int64
	restores              atomic.Int64
}

func (e *eoState) init(socket string, log *zap.Logger) {
	e.everConnected = map[int32]bool{}
	e.tmOut = make(chan []byte, 4096)
	e.ckpt = newCkptClient(socket, log)
}

// sendTM queues a message for the topology manager; it is dropped when
// the queue is full (the topology manager times out what it waits for).
func (s *StMgr) sendTM(m proto.Message) {
	b, err := wire.AppendMessage(nil, m)
	if err != nil {
		s.log.Error("encode message for the topology manager", zap.Error(err))
		return
	}
	select {
	case s.eo.tmOut <- b:
	default:
		s.log.Warn("dropping a checkpoint message for the topology manager: its queue is full", zap.String("message", string(proto.MessageName(m))))
	}
}

// applyCheckpointPlan updates the effectively-once settings and the
// upstream sets of the local tasks for a new plan. Called with s.mu held.
func (s *StMgr) applyCheckpointPlan(logical *topology.Topology, rt *routes, pp *egretpb.PhysicalPlan) {
	eo := logical != nil && logical.DeliveryMode() == topology.EffectivelyOnce
	s.eo.on.Store(eo)
	if !eo {
		return
	}
	s.eo.alignTimeout.Store(int64(logical.AlignmentTimeout()))
	layout := plan.FromProto(pp.GetPacking()).Layout()
	for task, td := range rt.local {
		if td == nil {
			continue
		}
		up := map[uint32]bool{}
		for _, comp := range logical.Producers(layout.ComponentOf[task]) {
			for _, t := range layout.Tasks[comp] {
				up[uint32(t)] = true
			}
		}
		td.al.mu.Lock()
		td.al.upstream, td.al.component = up, layout.ComponentOf[task]
		td.al.mu.Unlock()
	}
}

// deliverLocal queues f (a data frame or a barrier) for the local task td
// in effectively-once mode: fenced by epoch, aligned by barrier.
func (s *StMgr) deliverLocal(ctx context.Context, td *taskDest, f *frame, count int64) error {
	a := &td.al
	a.mu.Lock()
	defer a.mu.Unlock()
	if f.epoch < a.epoch {
		s.eo.fenced.Add(1)
		s.putFrame(f)
		return nil
	}
	if wire.FrameType(f.body[0]) == wire.FrameBarrier {
		b, err := wire.ParseBarrier(f.body[1:])
		s.putFrame(f)
		if err != nil || b.Epoch != a.epoch {
			return nil
		}
		s.alignLocked(ctx, td, b)
		return nil
	}
	if a.aligning {
		if src, ok := wire.FirstSource(f.body[1:]); ok && a.arrived[src] {
			a.held = append(a.held, f)
			a.heldSize += frameSize(f)
			s.eo.held.Add(count)
			if a.heldSize > s.set.bufferMax {
				s.abortLocked(ctx, td, "the frames held for alignment passed the queue bound")
			}
			return nil
		}
	}
	return s.push(ctx, &td.dest, f, count, false)
}

// alignLocked handles barrier b for the task. Called with td.al.mu held.
func (s *StMgr) alignLocked(ctx context.Context, td *taskDest, b wire.Barrier) {
	a := &td.al
	switch {
	case b.Checkpoint < a.ckpt:
		return // of a checkpoint already aligned or aborted
	case b.Checkpoint > a.ckpt:
		if a.aligning {
			s.abortLocked(ctx, td, fmt.Sprintf("the barrier of checkpoint %d arrived first", b.Checkpoint))
		}
		a.ckpt, a.aligning, a.arrived, a.started = b.Checkpoint, true, map[uint32]bool{}, time.Now()
	}
	if !a.aligning || !a.upstream[b.Src] {
		return
	}
	a.arrived[b.Src] = true
	if len(a.arrived) < len(a.upstream) {
		return
	}
	s.releaseLocked(ctx, td, 0)
}

// releaseLocked ends the task's alignment: the barrier (with flags) goes to
// the task, then the frames held.
func (s *StMgr) releaseLocked(ctx context.Context, td *taskDest, flags uint8) {
	a := &td.al
	a.aligning = false
	a.alignedCkpt, a.alignedIn = a.ckpt, time.Since(a.started)
	f := s.getFrame()
	f.body = wire.AppendBarrier(f.body[:0], wire.Barrier{Dest: uint32(td.task), Checkpoint: a.ckpt, Epoch: a.epoch, Flags: flags})[4:]
	f.epoch = a.epoch
	s.pushControl(&td.dest, f)
	for i, h := range a.held {
		_ = s.push(ctx, &td.dest, h, frameTuples(h), false)
		a.held[i] = nil
	}
	a.held, a.heldSize = a.held[:0], 0
}

func (s *StMgr) abortLocked(ctx context.Context, td *taskDest, reason string) {
	s.eo.aborted.Add(1)
	s.log.Warn("barrier alignment aborted", zap.Int32("task", td.task), zap.Int64("checkpoint", td.al.ckpt), zap.String("reason", reason))
	s.releaseLocked(ctx, td, wire.BarrierAborted)
}

// pushControl queues a control frame whatever the queue's bound.
func (s *StMgr) pushControl(d *dest, f *frame) {
	if err := d.q.PushUnbounded(f); err != nil {
		s.putFrame(f)
		return
	}
	d.q.Signal()
}

// controlFrame builds a frame holding message m, stamped with epoch.
func (s *StMgr) controlFrame(m proto.Message, epoch int64) *frame {
	f := s.getFrame()
	b, err := wire.AppendMessage(f.body[:0], m)
	if err != nil {
		s.log.Error("encode control frame", zap.Error(err))
		s.putFrame(f)
		return nil
	}
	f.body = b[4:]
	f.epoch = epoch
	return f
}

// runAlignmentTimeouts aborts alignments that take too long.
func (s *StMgr) runAlignmentTimeouts(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if !s.eo.on.Load() {
				continue
			}
			timeout := time.Duration(s.eo.alignTimeout.Load())
			for _, td := range s.localTasks() {
				td.al.mu.Lock()
				if td.al.aligning && now.Sub(td.al.started) > timeout {
					s.abortLocked(ctx, td, fmt.Sprintf("not aligned within %s (topology.stateful.alignment.timeout)", timeout))
				}
				td.al.mu.Unlock()
			}
		}
	}
}

// localTasks returns the local tasks of the current plan.
func (s *StMgr) localTasks() []*taskDest {
	rt := s.table.Load()
	if rt == nil {
		return nil
	}
	var out []*taskDest
	for _, td := range rt.local {
		if td != nil {
			out = append(out, td)
		}
	}
	return out
}

// alignedIn returns how long the local task's alignment of checkpoint
// ckpt took (0: the task aligned nothing for it, as a spout).
func (s *StMgr) alignedIn(task int32, ckpt int64) time.Duration {
	rt := s.table.Load()
	if rt == nil || task < 0 || int(task) >= len(rt.local) || rt.local[task] == nil {
		return 0
	}
	a := &rt.local[task].al
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.alignedCkpt != ckpt {
		return 0
	}
	return a.alignedIn
}

// startCheckpoint injects the barrier of a checkpoint into every local
// spout task's queue.
func (s *StMgr) startCheckpoint(m *egretpb.StartCheckpoint) {
	if !s.eo.on.Load() || m.GetEpoch() != s.eo.epoch.Load() || m.GetCheckpointId() <= 0 {
		return
	}
	for _, td := range s.localTasks() {
		if !td.spout.Load() {
			continue
		}
		td.al.mu.Lock()
		if td.al.epoch == m.GetEpoch() && m.GetCheckpointId() > td.al.ckpt {
			td.al.ckpt = m.GetCheckpointId()
			f := s.getFrame()
			f.body = wire.AppendBarrier(f.body[:0], wire.Barrier{Dest: uint32(td.task), Checkpoint: m.GetCheckpointId(), Epoch: m.GetEpoch()})[4:]
			f.epoch = m.GetEpoch()
			s.pushControl(&td.dest, f)
		}
		td.al.mu.Unlock()
	}
}

// storeState forwards a task's saved state to the checkpoint manager and
// reports the outcome to the topology manager.
func (s *StMgr) storeState(m *egretpb.StoreInstanceState) {
	if m.GetEpoch() != s.eo.epoch.Load() {
		return
	}
	report := func(errText string) {
		if errText != "" {
			s.eo.storeFailed.Add(1)
		} else {
			s.eo.stored.Add(1)
		}
		s.sendTM(&egretpb.InstanceStateStored{CheckpointId: m.GetCheckpointId(), Epoch: m.GetEpoch(), TaskId: m.GetTaskId(),
			SizeBytes: int64(len(m.GetState())), Error: errText, AlignmentNanos: int64(s.alignedIn(m.GetTaskId(), m.GetCheckpointId()))})
	}
	if m.GetError() != "" {
		report(m.GetError())
		return
	}
	s.eo.ckpt.call(&egretpb.SaveStateRequest{CheckpointId: m.GetCheckpointId(), TaskId: m.GetTaskId(), State: m.GetState()},
		func(resp proto.Message, err error) {
			if err == nil {
				err = responseError(resp)
			}
			if err != nil {
				report(fmt.Sprintf("checkpoint manager: %v", err))
				return
			}
			report("")
		})
}

// restore rolls the container's tasks back to a checkpoint in a new epoch.
func (s *StMgr) restore(m *egretpb.RestoreTopologyState) {
	e, id := m.GetEpoch(), m.GetCheckpointId()
	s.eo.mu.Lock()
	if e <= s.eo.epoch.Load() {
		// Every restore comes with a new epoch: an older one is stale.
		s.eo.mu.Unlock()
		return
	}
	s.eo.epoch.Store(e)
	s.eo.restoreID, s.eo.responded = id, false
	s.eo.mu.Unlock()
	s.eo.restores.Add(1)
	rescaled := map[string][]int32{}
	for _, c := range m.GetRescaled() {
		rescaled[c.GetComponent()] = c.GetTaskIds()
	}
	s.log.Info("restoring", zap.Int64("checkpoint", id), zap.Int64("epoch", e), zap.Int("rescaled_components", len(rescaled)))
	s.mu.Lock()
	peers := make([]*peer, 0, len(s.peers))
	for _, p := range s.peers {
		peers = append(peers, p)
	}
	s.mu.Unlock()
	for _, p := range peers {
		p.q.Discard(s.dropFrame(&p.dest))
		f := s.getFrame()
		f.body = wire.AppendEpoch(f.body[:0], e)[4:]
		f.epoch = e
		s.pushControl(&p.dest, f)
	}
	for _, td := range s.localTasks() {
		td.al.mu.Lock()
		td.al.epoch = e
		td.al.aligning, td.al.ckpt = false, 0
		for i := range td.al.held {
			s.putFrame(td.al.held[i])
			td.al.held[i] = nil
		}
		td.al.held, td.al.heldSize = td.al.held[:0], 0
		td.q.Discard(s.dropFrame(&td.dest))
		old := rescaled[td.al.component]
		td.al.mu.Unlock()
		s.restoreTask(td, id, e, old)
	}
	s.checkRestored()
}

// restoreTask loads the task's state of checkpoint id and queues the
// restore for its instance. A task of a component rescaled since the
// checkpoint gets the component's tasks then (old) instead: it reads
// their checkpoints itself and keeps its share.
func (s *StMgr) restoreTask(td *taskDest, id, epoch int64, old []int32) {
	send := func(state []byte, errText string) {
		if errText != "" {
			s.log.Error("cannot restore a task", zap.Int32("task", td.task), zap.Int64("checkpoint", id), zap.String("error", errText))
			s.sendTM(&egretpb.RestoreTopologyStateResponse{Container: int32(s.cfg.Container), CheckpointId: id, Epoch: epoch,
				Error: fmt.Sprintf("task %d: %s", td.task, errText)})
			return
		}
		td.al.mu.Lock()
		defer td.al.mu.Unlock()
		if td.al.epoch != epoch {
			return
		}
		if f := s.controlFrame(&egretpb.RestoreInstanceState{CheckpointId: id, Epoch: epoch, State: state, OldTasks: old}, epoch); f != nil {
			s.pushControl(&td.dest, f)
		}
	}
	if id == 0 || len(old) > 0 {
		send(nil, "")
		return
	}
	s.eo.ckpt.call(&egretpb.LoadStateRequest{CheckpointId: id, TaskId: td.task}, func(resp proto.Message, err error) {
		if err == nil {
			err = responseError(resp)
		}
		if err != nil {
			send(nil, fmt.Sprintf("load checkpoint %d: %v", id, err))
			return
		}
		send(resp.(*egretpb.LoadStateResponse).GetState(), "")
	})
}

// instanceRestored records an instance's restore response.
func (s *StMgr) instanceRestored(td *taskDest, m *egretpb.RestoreInstanceStateResponse) {
	if m.GetError() != "" {
		s.sendTM(&egretpb.RestoreTopologyStateResponse{Container: int32(s.cfg.Container), CheckpointId: s.restoreID(), Epoch: m.GetEpoch(),
			Error: fmt.Sprintf("task %d: %s", td.task, m.GetError())})
		return
	}
	td.al.mu.Lock()
	td.al.restored = m.GetEpoch()
	td.al.mu.Unlock()
	s.checkRestored()
}

func (s *StMgr) restoreID() int64 {
	s.eo.mu.Lock()
	defer s.eo.mu.Unlock()
	return s.eo.restoreID
}

// checkRestored answers the topology manager once every local task of the
// plan restored the current epoch.
func (s *StMgr) checkRestored() {
	e := s.eo.epoch.Load()
	if e == 0 {
		return
	}
	tasks := s.localTasks()
	if len(tasks) == 0 {
		return
	}
	for _, td := range tasks {
		td.al.mu.Lock()
		done := td.al.restored == e
		td.al.mu.Unlock()
		if !done {
			return
		}
	}
	s.eo.mu.Lock()
	if s.eo.responded || s.eo.epoch.Load() != e {
		s.eo.mu.Unlock()
		return
	}
	s.eo.responded = true
	id := s.eo.restoreID
	s.eo.mu.Unlock()
	s.log.Info("container restored", zap.Int64("checkpoint", id), zap.Int64("epoch", e))
	s.sendTM(&egretpb.RestoreTopologyStateResponse{Container: int32(s.cfg.Container), CheckpointId: id, Epoch: e})
}

// broadcastLocal queues a control message for every local task of epoch.
func (s *StMgr) broadcastLocal(m proto.Message, epoch int64) {
	if epoch != s.eo.epoch.Load() {
		return
	}
	for _, td := range s.localTasks() {
		td.al.mu.Lock()
		if f := s.controlFrame(m, epoch); f != nil && td.al.epoch == epoch {
			s.pushControl(&td.dest, f)
		} else if f != nil {
			s.putFrame(f)
		}
		td.al.mu.Unlock()
	}
}

// checkpointComplete tells the local tasks and cleans old checkpoints.
func (s *StMgr) checkpointComplete(m *egretpb.CheckpointComplete) {
	s.broadcastLocal(m, m.GetEpoch())
	if m.GetKeepFrom() > 0 {
		s.eo.ckpt.call(&egretpb.CleanCheckpointsRequest{KeepFrom: m.GetKeepFrom()}, func(resp proto.Message, err error) {
			if err == nil {
				err = responseError(resp)
			}
			if err != nil {
				s.log.Warn("cannot delete old checkpoints", zap.Int64("keep_from", m.GetKeepFrom()), zap.Error(err))
			}
		})
	}
}

// instanceEvent reports to the topology manager that a local instance
// failed or came back, which in effectively-once mode needs a rollback.
func (s *StMgr) instanceEvent(task int32, connected bool) {
	if !s.eo.on.Load() {
		return
	}
	s.eo.mu.Lock()
	again := s.eo.everConnected[task]
	s.eo.everConnected[task] = true
	s.eo.mu.Unlock()
	switch {
	case !connected:
		s.sendTM(&egretpb.ResetTopologyState{Container: int32(s.cfg.Container), Reason: fmt.Sprintf("instance of task %d disconnected", task)})
	case again:
		s.sendTM(&egretpb.ResetTopologyState{Container: int32(s.cfg.Container), Reason: fmt.Sprintf("instance of task %d reconnected", task)})
	}
}

// handleTMCheckpoint acts on a checkpoint message of the topology manager.
func (s *StMgr) handleTMCheckpoint(m proto.Message) bool {
	switch m := m.(type) {
	case *egretpb.StartCheckpoint:
		s.startCheckpoint(m)
	case *egretpb.RestoreTopologyState:
		s.restore(m)
	case *egretpb.StartProcessing:
		s.broadcastLocal(m, m.GetEpoch())
	case *egretpb.CheckpointComplete:
		s.checkpointComplete(m)
	default:
		return false
	}
	return true
}

// handleInstanceCheckpoint acts on a checkpoint message of an instance and
// returns the connection's new epoch.
func (s *StMgr) handleInstanceCheckpoint(td *taskDest, m proto.Message, epoch int64) (int64, error) {
	switch m := m.(type) {
	case *egretpb.StoreInstanceState:
		if m.GetTaskId() != td.task {
			return epoch, fmt.Errorf("%w: task %d sent the state of task %d", wire.ErrCorrupt, td.task, m.GetTaskId())
		}
		if m.GetEpoch() == epoch {
			s.storeState(m)
		}
	case *egretpb.RestoreInstanceStateResponse:
		if m.GetTaskId() != td.task {
			return epoch, fmt.Errorf("%w: task %d answered for task %d", wire.ErrCorrupt, td.task, m.GetTaskId())
		}
		epoch = max(epoch, m.GetEpoch())
		s.instanceRestored(td, m)
	default:
		return epoch, fmt.Errorf("%w: unexpected %s from an instance", wire.ErrCorrupt, proto.MessageName(m))
	}
	return epoch, nil
}
