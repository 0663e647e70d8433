package tmanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

// The topology manager coordinates effectively-once checkpoints
// (DESIGN.md §6): it starts one every topology.stateful.checkpoint.interval
// while the topology runs, collects every task's InstanceStateStored,
// records a complete checkpoint in /checkpoints/<topology> before telling
// the stream managers (so a two-phase-commit sink commits only what is
// durable), aborts a checkpoint that is not complete within twice the
// alignment timeout, and on any failure (a stream manager lost or back, an
// instance lost or back, a failed restore) rolls the topology back to the
// last complete checkpoint in a new epoch: every container restores, and
// only when all did does processing start again.

// checkpointTickInterval is how often due checkpoints are started and
// expired ones aborted.
const checkpointTickInterval = 50 * time.Millisecond

type ckptPhase int

const (
	phaseIdle      ckptPhase = iota // waiting for every stream manager
	phaseRestoring                  // a restore of epoch is in progress
	phaseRunning                    // processing; checkpoints run
)

// inflight is the checkpoint in progress.
type inflight struct {
	id      int64
	started time.Time
	pending map[int32]bool
	size    int64
	// alignment is the longest barrier alignment a task reported.
	alignment time.Duration
	// tasks are the task ids of each component, in index order, of the
	// plan the checkpoint was started in.
	tasks map[string][]int32
}

// coordinator is the checkpoint state; guarded by manager.mu.
type coordinator struct {
	on                   bool
	interval, ckptExpiry time.Duration
	keep                 int

	phase        ckptPhase
	epoch        int64
	restoreID    int64
	pendingRest  map[int]bool
	retryAt      time.Time // a failed restore is retried then
	lastComplete int64
	lastAt       time.Time
	lastSize     int64
	lastDuration time.Duration
	// lastAlignment is the longest barrier alignment of a task in the
	// last complete checkpoint.
	lastAlignment time.Duration
	// lastTasks are the tasks of each component at the last complete
	// checkpoint (nil when unknown: a state of an older version).
	lastTasks map[string][]int32
	lastStart time.Time
	nextID    int64
	cur       *inflight
	sp        *spRequest          // a savepoint asked for (savepoint.go)
	pins      map[int64]time.Time // checkpoints kept for savepoints, until then

	started, completed, aborted, failed, restores, restoreFailures int64
	metricsAt                                                      time.Time
}

// initCheckpoints reads the checkpoint state of an effectively-once
// topology. An unreadable one is an error: guessing "no checkpoint" would
// roll every task back to empty states.
func (m *manager) initCheckpoints(ctx context.Context, t *topology.Topology) error {
	c := &m.ckpt
	c.on = t.DeliveryMode() == topology.EffectivelyOnce
	if !c.on {
		return nil
	}
	c.interval, c.ckptExpiry, c.keep = t.CheckpointInterval(), 2*t.AlignmentTimeout(), t.CheckpointsKept()
	rctx, cancel := context.WithTimeout(ctx, stateWriteTimeout)
	defer cancel()
	st, err := m.store.CheckpointState(rctx, m.name)
	switch {
	case err == nil && st.GetTopologyId() == m.id:
		c.lastComplete, c.epoch = st.GetLastCompleteId(), st.GetEpoch()
		c.lastSize = st.GetLastCompleteSizeBytes()
		c.lastTasks = tasksFromProto(st.GetTasks())
		c.pins = pinsFromProto(st.GetPins(), m.clock.Now())
		if ns := st.GetLastCompleteUnixNanos(); ns > 0 {
			c.lastAt = time.Unix(0, ns)
		}
		m.log.Info("effectively-once: resuming from the checkpoint state", zap.Int64("last_complete", c.lastComplete), zap.Int64("epoch", c.epoch))
	case err == nil, errors.Is(err, spi.ErrNotFound):
		m.log.Info("effectively-once: no complete checkpoint yet")
	case errors.Is(err, spi.ErrCorrupt):
		return fmt.Errorf("the checkpoint state of %q is corrupt (%w); delete %s/%s to restart the topology from empty states", m.name, err, state.CheckpointsDir, m.name)
	default:
		return fmt.Errorf("read the checkpoint state of %q: %w", m.name, err)
	}
	c.nextID = c.lastComplete + 1
	return nil
}

// saveCheckpointStateLocked writes /checkpoints/<topology>.
func (m *manager) saveCheckpointStateLocked() error {
	c := &m.ckpt
	st := &egretpb.CheckpointState{TopologyName: m.name, TopologyId: m.id, LastCompleteId: c.lastComplete, LastCompleteSizeBytes: c.lastSize, Epoch: c.epoch,
		Tasks: tasksToProto(c.lastTasks), Pins: pinsToProto(c.pins)}
	if !c.lastAt.IsZero() {
		st.LastCompleteUnixNanos = c.lastAt.UnixNano()
	}
	ctx, cancel := context.WithTimeout(m.ctx, stateWriteTimeout)
	defer cancel()
	return m.store.SetCheckpointState(ctx, m.name, st)
}

// broadcastLocked sends msg to every registered stream manager.
func (m *manager) broadcastLocked(msg proto.Message) {
	frame := encode(msg, m.log)
	for _, c := range sortedKeys(m.stmgrs) {
		m.stmgrs[c].conn.send(frame)
	}
}

// beginRestoreLocked rolls the topology back to the last complete
// checkpoint in a new epoch.
func (m *manager) beginRestoreLocked(reason string) {
	c := &m.ckpt
	if !c.on || m.stopping {
		return
	}
	if c.cur != nil {
		c.aborted++
		c.cur = nil
	}
	c.epoch++
	c.phase, c.restoreID, c.retryAt = phaseRestoring, c.lastComplete, time.Time{}
	c.pendingRest = map[int]bool{}
	for id := range m.expected {
		c.pendingRest[id] = true
	}
	c.restores++
	c.nextID = c.lastComplete + 1
	if err := m.saveCheckpointStateLocked(); err != nil {
		m.log.Error("cannot record the new epoch in the state manager", zap.Int64("epoch", c.epoch), zap.Error(err))
	}
	msg := &egretpb.RestoreTopologyState{CheckpointId: c.restoreID, Epoch: c.epoch}
	if c.restoreID > 0 {
		msg.Rescaled = tasksToProto(rescaled(c.lastTasks, tasksOf(m.packing.Layout())))
	}
	m.log.Warn("effectively-once: restoring the topology", zap.Int64("checkpoint", c.restoreID), zap.Int64("epoch", c.epoch), zap.String("reason", reason),
		zap.Int("rescaled_components", len(msg.Rescaled)))
	m.broadcastLocked(msg)
	m.publishCheckpointMetricsLocked()
}

// ckptStmgrRegisteredLocked reacts to a stream manager registration: the first
// complete set starts the first restore; any later one is a failure.
func (m *manager) ckptStmgrRegisteredLocked(container int) {
	if !m.ckpt.on || !m.allRegisteredLocked() {
		return
	}
	m.beginRestoreLocked(fmt.Sprintf("stream manager of container %d registered", container))
}

// ckptStmgrLostLocked reacts to a lost stream manager.
func (m *manager) ckptStmgrLostLocked(container int) {
	if m.ckpt.on && m.ckpt.phase != phaseIdle {
		m.beginRestoreLocked(fmt.Sprintf("stream manager of container %d lost", container))
	}
}

// handleCheckpointMsg handles a checkpoint message of a stream manager.
func (m *manager) handleCheckpointMsg(c *conn, msg proto.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.container == 0 {
		return errors.New("checkpoint message on a connection without a registered stream manager")
	}
	ck := &m.ckpt
	if !ck.on {
		return nil
	}
	switch msg := msg.(type) {
	case *egretpb.ResetTopologyState:
		if ck.phase != phaseIdle {
			m.beginRestoreLocked(fmt.Sprintf("container %d: %s", c.container, msg.GetReason()))
		}
	case *egretpb.RestoreTopologyStateResponse:
		if ck.phase != phaseRestoring || msg.GetEpoch() != ck.epoch {
			return nil
		}
		if msg.GetError() != "" {
			ck.restoreFailures++
			ck.retryAt = m.clock.Now().Add(time.Second)
			m.log.Error("effectively-once: a container could not restore; retrying", zap.Int("container", c.container),
				zap.Int64("epoch", ck.epoch), zap.String("error", msg.GetError()))
			return nil
		}
		delete(ck.pendingRest, int(msg.GetContainer()))
		if len(ck.pendingRest) == 0 {
			ck.phase = phaseRunning
			ck.lastStart = m.clock.Now()
			m.log.Info("effectively-once: every container restored; processing starts", zap.Int64("checkpoint", ck.restoreID), zap.Int64("epoch", ck.epoch))
			m.broadcastLocked(&egretpb.StartProcessing{Epoch: ck.epoch})
		}
	case *egretpb.InstanceStateStored:
		cur := ck.cur
		if ck.phase != phaseRunning || msg.GetEpoch() != ck.epoch || cur == nil || cur.id != msg.GetCheckpointId() {
			return nil
		}
		if msg.GetError() != "" {
			ck.failed++
			m.log.Warn("effectively-once: checkpoint failed", zap.Int64("checkpoint", cur.id), zap.Int32("task", msg.GetTaskId()), zap.String("error", msg.GetError()))
			ck.cur = nil
			m.publishCheckpointMetricsLocked()
			return nil
		}
		if cur.pending[msg.GetTaskId()] {
			delete(cur.pending, msg.GetTaskId())
			cur.size += msg.GetSizeBytes()
			cur.alignment = max(cur.alignment, time.Duration(msg.GetAlignmentNanos()))
		}
		if len(cur.pending) == 0 {
			m.completeLocked(cur)
		}
	default:
		return fmt.Errorf("unexpected %s", proto.MessageName(msg))
	}
	return nil
}

// completeLocked records a complete checkpoint, then announces it.
func (m *manager) completeLocked(cur *inflight) {
	ck := &m.ckpt
	ck.cur = nil
	prev := *ck
	now := m.clock.Now()
	ck.lastComplete, ck.lastAt, ck.lastSize, ck.lastDuration, ck.lastAlignment, ck.lastTasks = cur.id, now, cur.size, now.Sub(cur.started), cur.alignment, cur.tasks
	// A savepoint's pin is recorded with the checkpoint it keeps.
	pinned := ck.sp != nil && ck.sp.id == cur.id
	if pinned {
		m.pinSavepointLocked(cur.id, now)
	}
	if err := m.saveCheckpointStateLocked(); err != nil {
		// Not durable: it is not complete.
		ck.lastComplete, ck.lastAt, ck.lastSize, ck.lastDuration, ck.lastAlignment, ck.lastTasks = prev.lastComplete, prev.lastAt, prev.lastSize, prev.lastDuration, prev.lastAlignment, prev.lastTasks
		if pinned {
			delete(ck.pins, cur.id)
		}
		ck.failed++
		m.log.Error("effectively-once: cannot record a complete checkpoint; it does not count", zap.Int64("checkpoint", cur.id), zap.Error(err))
		return
	}
	ck.completed++
	if pinned {
		m.endSavepointLocked(nil, cur.size)
	}
	keepFrom := m.keepFromLocked(max(cur.id-int64(ck.keep)+1, 1), now)
	m.log.Debug("checkpoint complete", zap.Int64("checkpoint", cur.id), zap.Duration("duration", ck.lastDuration), zap.Int64("bytes", cur.size))
	m.broadcastLocked(&egretpb.CheckpointComplete{CheckpointId: cur.id, Epoch: ck.epoch, KeepFrom: keepFrom})
	m.publishCheckpointMetricsLocked()
}

// checkpointTick starts, expires and retries what is due.
func (m *manager) checkpointTick(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ck := &m.ckpt
	if !ck.on || m.stopping {
		return
	}
	switch ck.phase {
	case phaseRestoring:
		if !ck.retryAt.IsZero() && !now.Before(ck.retryAt) {
			m.beginRestoreLocked("retrying a failed restore")
		}
	case phaseRunning:
		if ck.cur != nil && now.Sub(ck.cur.started) > ck.ckptExpiry {
			ck.aborted++
			m.log.Warn("effectively-once: checkpoint aborted: not complete in time", zap.Int64("checkpoint", ck.cur.id),
				zap.Int("tasks_missing", len(ck.cur.pending)), zap.Duration("limit", ck.ckptExpiry))
			ck.cur = nil
			m.publishCheckpointMetricsLocked()
		}
		m.savepointTickLocked(now)
		if ck.cur == nil && now.Sub(ck.lastStart) >= ck.interval && m.state == egretpb.TopologyState_TOPOLOGY_STATE_RUNNING {
			m.startCheckpointLocked(now)
		}
	}
	if now.Sub(ck.metricsAt) >= time.Second {
		m.publishCheckpointMetricsLocked() // the age moves on
	}
}

// startCheckpointLocked starts the next checkpoint and returns its id.
func (m *manager) startCheckpointLocked(now time.Time) int64 {
	ck := &m.ckpt
	layout := m.packing.Layout()
	cur := &inflight{id: ck.nextID, started: now, pending: map[int32]bool{}, tasks: tasksOf(layout)}
	for task := range layout.ComponentOf {
		cur.pending[int32(task)] = true
	}
	ck.nextID++
	ck.cur, ck.lastStart = cur, now
	ck.started++
	m.broadcastLocked(&egretpb.StartCheckpoint{CheckpointId: cur.id, Epoch: ck.epoch})
	return cur.id
}

// publishCheckpointMetricsLocked puts the checkpoint figures in the
// metrics store (source "tmanager"): egret metrics and the tracker show
// them.
func (m *manager) publishCheckpointMetricsLocked() {
	now := m.clock.Now()
	m.ckpt.metricsAt = now
	m.metrics.add(m.checkpointMetricsLocked(now), now)
}

// checkpointMetrics returns the checkpoint figures for the metrics
// manager.
func (m *manager) checkpointMetrics() *egretpb.MetricsPublish {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checkpointMetricsLocked(m.clock.Now())
}

func (m *manager) checkpointMetricsLocked(now time.Time) *egretpb.MetricsPublish {
	ck := &m.ckpt
	age := -1.0
	if !ck.lastAt.IsZero() {
		age = now.Sub(ck.lastAt).Seconds()
	}
	mt := func(name string, v float64) *egretpb.Metric { return &egretpb.Metric{Name: name, Value: v} }
	return &egretpb.MetricsPublish{Source: "tmanager", UnixNanos: now.UnixNano(), Metrics: []*egretpb.Metric{
		mt("checkpoint.last.complete.id", float64(ck.lastComplete)),
		mt("checkpoint.last.complete.age.seconds", age),
		mt("checkpoint.last.duration.ms", float64(ck.lastDuration.Milliseconds())),
		mt("checkpoint.last.alignment.ms", float64(ck.lastAlignment)/float64(time.Millisecond)),
		mt("checkpoint.last.size.bytes", float64(ck.lastSize)),
		mt("checkpoint.started", float64(ck.started)),
		mt("checkpoint.completed", float64(ck.completed)),
		mt("checkpoint.aborted", float64(ck.aborted)),
		mt("checkpoint.failed", float64(ck.failed)),
		mt("checkpoint.restores", float64(ck.restores)),
		mt("checkpoint.restore.failures", float64(ck.restoreFailures)),
		mt("checkpoint.epoch", float64(ck.epoch)),
	}}
}

// tasksOf returns the task ids of each component of l, in index order.
func tasksOf(l *plan.Layout) map[string][]int32 {
	out := make(map[string][]int32, len(l.Tasks))
	for comp, ids := range l.Tasks {
		ids = slices.Clone(ids)
		slices.SortStableFunc(ids, func(a, b int) int { return l.IndexOf[a] - l.IndexOf[b] })
		tasks := make([]int32, len(ids))
		for i, id := range ids {
			tasks[i] = int32(id)
		}
		out[comp] = tasks
	}
	return out
}

// rescaled returns the components whose tasks at a checkpoint (then)
// differ from the current ones (now), with their tasks then. A component
// absent from then (a state written before the tasks were recorded) is
// not rescaled: its tasks read their own checkpoints.
func rescaled(then, now map[string][]int32) map[string][]int32 {
	out := map[string][]int32{}
	for comp, tasks := range now {
		if old, ok := then[comp]; ok && !slices.Equal(old, tasks) {
			out[comp] = old
		}
	}
	return out
}

func tasksToProto(m map[string][]int32) []*egretpb.ComponentTasks {
	out := make([]*egretpb.ComponentTasks, 0, len(m))
	for _, comp := range slices.Sorted(maps.Keys(m)) {
		out = append(out, &egretpb.ComponentTasks{Component: comp, TaskIds: m[comp]})
	}
	return out
}

func tasksFromProto(list []*egretpb.ComponentTasks) map[string][]int32 {
	if len(list) == 0 {
		return nil
	}
	out := make(map[string][]int32, len(list))
	for _, c := range list {
		out[c.GetComponent()] = c.GetTaskIds()
	}
	return out
}
