package stmgr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// instConn is the connection of one registered instance.
type instConn struct {
	conn net.Conn
	// ctx ends when the connection is closed (what a direct sink's
	// calls wait on).
	ctx        context.Context
	cancel     context.CancelFunc
	task       int32
	plan       atomic.Pointer[egretpb.PhysicalPlan] // a plan to forward
	done       chan struct{}                        // closed by close
	writerDone chan struct{}                        // closed when its writer returned
	once       sync.Once
}

func (ic *instConn) close() {
	ic.once.Do(func() {
		close(ic.done)
		ic.cancel()
		_ = ic.conn.Close()
	})
}

// serveInstance handles one connection on the Unix socket: registration,
// then a writer goroutine for the task's queue and this goroutine reading
// the instance's data frames.
func (s *StMgr) serveInstance(ctx context.Context, conn net.Conn) {
	who := "instance (unregistered)"
	br := bufio.NewReaderSize(conn, 64<<10)
	_ = conn.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	t, m, _, err := wire.ReadMessage(br, nil, s.set.maxFrame)
	if err != nil {
		s.closeReason(who, conn, fmt.Errorf("registration: %w", err))
		return
	}
	req, ok := m.(*egretpb.RegisterInstanceRequest)
	if !ok {
		s.closeReason(who, conn, fmt.Errorf("%w: expected RegisterInstanceRequest, got %s", wire.ErrCorrupt, t))
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	who = fmt.Sprintf("instance task %d (pid %d)", req.GetTaskId(), req.GetPid())
	if c := req.GetComponent(); c != "" {
		who = fmt.Sprintf("instance %s/%d (pid %d)", c, req.GetTaskId(), req.GetPid())
	}
	td, ic, pp, err := s.attachInstance(req, conn)
	if err != nil {
		_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
		_ = wire.WriteMessage(conn, &egretpb.RegisterInstanceResponse{Error: err.Error(), LayoutChanged: errors.Is(err, errLayoutChanged)})
		s.closeReason(who, conn, fmt.Errorf("registration refused: %w", err))
		return
	}
	defer s.detachInstance(td, ic)
	// An instance in this process that attached a sink gets its frames
	// handed over directly, and hands its own to a directInstance.
	cw := s.newConnWriter(conn)
	var w frameWriter = cw
	if ac, ok := conn.(wire.Attacher); ok {
		if sink, ok := ac.Peer().(wire.FrameHandler); ok {
			dw := directWriter{ctx: ic.ctx, sink: sink}
			if w = dw; pp == nil {
				w = &planThenDirect{conn: cw, direct: dw}
			}
			ac.Attach(&directInstance{s: s, in: s.newInbound(0, td, 0), ic: ic, who: who, conn: conn})
		}
	}
	_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if err := wire.WriteMessage(conn, &egretpb.RegisterInstanceResponse{Pplan: pp}); err != nil {
		s.closeReason(who, conn, fmt.Errorf("registration response: %w", err))
		close(ic.writerDone)
		return
	}
	_ = conn.SetWriteDeadline(time.Time{})
	s.log.Info("instance registered", zap.String("peer", who), zap.Bool("has_plan", pp != nil))
	s.instanceEvent(td.task, true)
	s.c.instancesConnected.Add(1)
	defer s.c.instancesConnected.Add(-1)
	go func() {
		defer close(ic.writerDone)
		if err := s.writeLoop(w, &td.dest, ic.done, &ic.plan, false, pp != nil); err != nil {
			s.log.Debug("writer to instance stopped", zap.String("peer", who), zap.Error(err))
		}
		ic.close()
	}()
	err = s.readLoop(ctx, br, s.newInbound(0, td, 0), ic.done)
	select {
	case <-ic.done:
		err = nil // closed by us: replaced, or shutting down
	default:
	}
	if ctx.Err() == nil {
		s.instanceEvent(td.task, false)
	}
	s.closeReason(who, conn, err)
}

// attachInstance makes conn the connection of the registering task. A
// task already connected is taken over by the new connection (the old
// instance process is gone or about to be). The plan returned for the
// response is nil unless the current plan places the task here.
func (s *StMgr) attachInstance(req *egretpb.RegisterInstanceRequest, conn net.Conn) (*taskDest, *instConn, *egretpb.PhysicalPlan, error) {
	if req.GetTopologyId() != s.cfg.TopologyID {
		return nil, nil, nil, fmt.Errorf("instance of topology id %q, this stream manager serves %q", req.GetTopologyId(), s.cfg.TopologyID)
	}
	task := req.GetTaskId()
	if task < 0 || task > maxTaskID {
		return nil, nil, nil, fmt.Errorf("task id %d out of range", task)
	}
	s.mu.Lock()
	pp := s.pplan
	if fp := req.GetLayoutFingerprint(); fp != 0 && pp != nil && fp != layoutFingerprint(pp) {
		s.mu.Unlock()
		return nil, nil, nil, fmt.Errorf("%w: the instance runs with an older task layout than plan version %d", errLayoutChanged, pp.GetVersion())
	}
	td := s.tasks[task]
	if td == nil {
		td = s.newTaskDest(task)
		s.tasks[task] = td
		if pp != nil {
			// Not placed here by the current plan: the executor started it
			// for a newer packing plan. It waits for a plan that places it.
			s.log.Info("instance registered for a task the current physical plan does not place in this container; it waits for a plan that does",
				zap.Int32("task", task), zap.Uint64("version", pp.GetVersion()))
			pp = nil
		}
	}
	old := td.conn
	ic := &instConn{conn: conn, task: task, done: make(chan struct{}), writerDone: make(chan struct{})}
	ic.ctx, ic.cancel = context.WithCancel(context.Background())
	td.conn = ic
	td.q.SetMax(s.set.liveMax)
	td.q.SetBlocking(true)
	td.live.Store(true)
	td.starting.Store(false)
	s.mu.Unlock()
	if old != nil {
		s.log.Warn("a new connection registered for a connected task; closing the old one", zap.Int32("task", task))
		old.close()
		<-old.writerDone
	}
	return td, ic, pp, nil
}

// errLayoutChanged refuses an instance that runs with an outdated layout:
// it must restart before it may receive tuples routed by the current plan.
var errLayoutChanged = errors.New("layout changed")

// layoutFingerprint is the fingerprint of a physical plan's task layout.
func layoutFingerprint(pp *egretpb.PhysicalPlan) uint64 {
	return plan.FromProto(pp.GetPacking()).Layout().Fingerprint()
}

// detachInstance closes ic and, if it is still the task's connection,
// makes the task's queue hold frames (dropping beyond its bound) until the
// instance reconnects.
func (s *StMgr) detachInstance(td *taskDest, ic *instConn) {
	ic.close()
	<-ic.writerDone
	s.mu.Lock()
	defer s.mu.Unlock()
	if td.conn != ic {
		return
	}
	td.conn = nil
	td.q.SetBlocking(false)
	td.q.SetMax(s.set.bufferMax)
	td.live.Store(false)
	// A dead instance's queue no longer holds back the topology (it
	// drops beyond its bound until the instance reconnects).
	defer s.checkWatermarks()
	if rt := s.table.Load(); rt != nil && (int(td.task) >= len(rt.local) || rt.local[td.task] != td) {
		// No longer local in the current plan: nothing will read it.
		delete(s.tasks, td.task)
		td.q.Close()
		td.q.Discard(s.dropFrame(&td.dest))
	}
}

// connectedTasks lists the tasks with a registered instance.
func (s *StMgr) connectedTasks() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int32
	for id, td := range s.tasks {
		if td.conn != nil {
			out = append(out, id)
		}
	}
	return out
}
