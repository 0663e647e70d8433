package stmgr

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/acking"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// At-least-once delivery: the stream manager of a spout's container holds
// the XOR ledger of every local spout task (no acker tasks, as in Heron).
// A spout instance registers its new roots (FrameAckInit) on its own
// connection ahead of the tuples they cover; bolts send FrameAck and
// FrameFail updates to their local stream manager, which applies those of
// local roots and forwards the others to the stream manager of the root's
// container. Completed and failed roots go back to their spout instance as
// FrameAckResult frames on its connection.

// spoutAcker is the ledger of one local spout task and its deliverer.
type spoutAcker struct {
	*acking.Acker
	cancel context.CancelFunc
}

// ackScratch is a reader goroutine's reusable decoding space.
type ackScratch struct {
	updates []wire.AckUpdate
	remote  map[int32][]wire.AckUpdate // by container
}

// handleAcks applies or forwards one acking frame read from an instance
// (td != nil) or a peer stream manager (peer > 0). A frame that breaks the
// protocol is an error: the connection is closed.
func (s *StMgr) handleAcks(ctx context.Context, t wire.FrameType, payload []byte, peer int32, td *taskDest, sc *ackScratch) error {
	from := "a peer stream manager"
	if td != nil {
		from = td.name
	}
	if t == wire.FrameAckResult || (t == wire.FrameAckInit && td == nil) {
		return fmt.Errorf("%w: unexpected %s frame from %s", wire.ErrCorrupt, t, from)
	}
	updates, err := wire.DecodeAckUpdates(payload, sc.updates)
	sc.updates = updates
	if err != nil {
		return err
	}
	rt, err := s.routesReady(ctx)
	if err != nil {
		return err
	}
	s.c.ackUpdatesIn.Add(int64(len(updates)))
	if t == wire.FrameAckInit {
		for _, u := range updates {
			if u.Root.Task != uint32(td.task) {
				return fmt.Errorf("%w: %s registered a root of task %d", wire.ErrCorrupt, from, u.Root.Task)
			}
		}
		if a := rt.acker(td.task); a != nil {
			a.Apply(t, updates)
		} else {
			s.ackUnroutable(len(updates), td.task)
		}
		return nil
	}
	for c, u := range sc.remote {
		sc.remote[c] = u[:0]
	}
	for start := 0; start < len(updates); {
		// Runs of updates for the same spout task are applied under one
		// lock; the others wait for their stream manager.
		task := updates[start].Root.Task
		end := start + 1
		for end < len(updates) && updates[end].Root.Task == task {
			end++
		}
		run := updates[start:end]
		start = end
		if a := rt.acker(int32(task)); a != nil {
			a.Apply(t, run)
			continue
		}
		c := rt.containerOf(task)
		if peer > 0 || c <= 0 || rt.isLocal(task) {
			// A peer forwards only roots of this container; a local task
			// without a ledger is not an at-least-once spout.
			s.ackUnroutable(len(run), int32(task))
			continue
		}
		if sc.remote == nil {
			sc.remote = map[int32][]wire.AckUpdate{}
		}
		sc.remote[c] = append(sc.remote[c], run...)
	}
	for _, u := range sc.remote {
		if len(u) == 0 {
			continue
		}
		f := s.getFrame()
		f.body = wire.AppendAckUpdates(append(f.body[:0], byte(t)), u)
		s.c.ackUpdatesForwarded.Add(int64(len(u)))
		// Route by any task of container c: the frame goes to its peer.
		if err := s.route(ctx, f, u[0].Root.Task, 0, false); err != nil {
			return err
		}
	}
	return nil
}

// ackUnroutable counts updates no ledger here can take, logging at most
// once a second.
func (s *StMgr) ackUnroutable(n int, task int32) {
	s.c.ackUnroutable.Add(int64(n))
	now := time.Now().UnixNano()
	last := s.c.lastAckUnroutableLog.Load()
	if now-last < int64(time.Second) || !s.c.lastAckUnroutableLog.CompareAndSwap(last, now) {
		return
	}
	s.log.Warn("dropping acking updates for roots of a task that is not an at-least-once spout of the physical plan",
		zap.Int32("task", task), zap.Int64("updates_unroutable_total", s.c.ackUnroutable.Load()))
}

// routesReady returns the routing table, waiting for the first plan.
func (s *StMgr) routesReady(ctx context.Context) (*routes, error) {
	if rt := s.table.Load(); rt != nil {
		return rt, nil
	}
	select {
	case <-s.planReady:
		return s.table.Load(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (rt *routes) acker(task int32) *acking.Acker {
	if task < 0 || int(task) >= len(rt.ackers) {
		return nil
	}
	return rt.ackers[task]
}

func (rt *routes) containerOf(task uint32) int32 {
	if int(task) >= len(rt.container) {
		return 0
	}
	return rt.container[task]
}

func (rt *routes) isLocal(task uint32) bool {
	return int(task) < len(rt.local) && rt.local[task] != nil
}

// planSettings are what a physical plan's topology says about the stream
// manager's work: whether it is at-least-once, the longest message
// timeout of its spouts, and whether back pressure drops tuples.
type planSettings struct {
	atLeastOnce bool
	timeout     time.Duration
	dropMode    bool
	logical     *topology.Topology // nil when the plan's topology does not decode
}

func settingsOf(pp *egretpb.PhysicalPlan) (planSettings, error) {
	logical, err := topology.FromProto(pp.GetTopology())
	if err != nil {
		return planSettings{}, err
	}
	ps := planSettings{atLeastOnce: logical.DeliveryMode() == topology.AtLeastOnce, dropMode: logical.DropTuplesUponBackPressure(), logical: logical}
	for _, c := range logical.Components {
		if c.Kind == topology.Spout {
			ps.timeout = max(ps.timeout, logical.MessageTimeout(c.Name))
		}
	}
	return ps, nil
}

// updateAckers creates the ledgers of the local spout tasks of a new plan
// (keeping those that exist) and drops the others; it fills rt.ackers.
// Called with s.mu held.
func (s *StMgr) updateAckers(ps planSettings, rt *routes, spoutTasks []int32) {
	keep := map[int32]bool{}
	if ps.atLeastOnce {
		s.ackTimeout.Store(int64(ps.timeout))
		for _, task := range spoutTasks {
			keep[task] = true
			sa := s.ackers[task]
			if sa == nil {
				a, err := acking.NewAcker(acking.DefaultBuckets, s.set.ledgerMax)
				if err != nil {
					s.log.Error("cannot create an acking ledger", zap.Int32("task", task), zap.Error(err))
					continue
				}
				ctx, cancel := context.WithCancel(s.runCtx)
				sa = &spoutAcker{Acker: a, cancel: cancel}
				s.ackers[task] = sa
				s.wg.Add(1)
				go func() { defer s.wg.Done(); s.deliverAcks(ctx, task, a) }()
			}
			for int(task) >= len(rt.ackers) {
				rt.ackers = append(rt.ackers, nil)
			}
			rt.ackers[task] = sa.Acker
		}
	}
	for task, sa := range s.ackers {
		if !keep[task] {
			sa.cancel()
			delete(s.ackers, task)
		}
	}
}

// deliverAcks sends the results of spout task's ledger to its instance
// until ctx ends. Results for an instance that is not connected wait in
// its queue up to the queue's bound and are dropped beyond it (the roots
// then time out in the spout and are replayed).
func (s *StMgr) deliverAcks(ctx context.Context, task int32, a *acking.Acker) {
	_ = a.Deliver(ctx, func(results []wire.AckResult) error {
		for len(results) > 0 {
			n := min(len(results), wire.MaxAckUpdates)
			f := s.getFrame()
			f.body = wire.AppendAckResults(append(f.body[:0], byte(wire.FrameAckResult)), results[:n])
			if err := s.pushResults(ctx, task, f, n); err != nil {
				return err
			}
			results = results[n:]
		}
		return nil
	})
}

// pushResults queues a FrameAckResult frame of n results toward task.
func (s *StMgr) pushResults(ctx context.Context, task int32, f *frame, n int) error {
	rt := s.table.Load()
	if rt == nil || !rt.isLocal(uint32(task)) {
		s.c.ackResultsLost.Add(int64(n))
		s.putFrame(f)
		return nil
	}
	d := &rt.local[task].dest
	err := d.q.Push(ctx, f)
	switch {
	case err == nil:
		s.c.ackResultsOut.Add(int64(n))
		return nil
	case ctx.Err() != nil:
		s.putFrame(f)
		return ctx.Err()
	default: // full while disconnected, or closed
		s.c.ackResultsLost.Add(int64(n))
		s.putFrame(f)
		return nil
	}
}

// rotateAckers rotates every ledger at the interval that keeps a root at
// least the longest message timeout, until ctx ends.
func (s *StMgr) rotateAckers(ctx context.Context) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		timeout := time.Duration(s.ackTimeout.Load())
		if timeout <= 0 {
			t.Reset(time.Second)
			continue
		}
		s.mu.Lock()
		for _, sa := range s.ackers {
			sa.Rotate()
		}
		s.mu.Unlock()
		t.Reset(acking.RotateInterval(timeout, acking.DefaultBuckets))
	}
}

// ackStats sums the ledgers' counters.
func (s *StMgr) ackStats() acking.AckerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum acking.AckerStats
	for _, sa := range s.ackers {
		st := sa.Stats()
		sum.Registered += st.Registered
		sum.Acked += st.Acked
		sum.Failed += st.Failed
		sum.Refused += st.Refused
		sum.Unknown += st.Unknown
		sum.Expired += st.Expired
		sum.Pending += st.Pending
	}
	return sum
}
