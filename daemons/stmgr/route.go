package stmgr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// inbound is the state of one connection's incoming frames: a peer
// stream manager's (peer > 0: back pressure announcements are accepted,
// data is only delivered to local tasks, never forwarded again) or an
// instance's (td is its task: a spout's frames are not taken while back
// pressure is on).
type inbound struct {
	s        *StMgr
	peer     int32
	td       *taskDest
	epoch    int64
	acks     ackScratch
	tuplesIn *atomic.Int64
	bytesIn  *atomic.Int64
}

func (s *StMgr) newInbound(peer int32, td *taskDest, epoch int64) *inbound {
	in := &inbound{s: s, peer: peer, td: td, epoch: epoch, tuplesIn: &s.c.fromInstancesTuples, bytesIn: &s.c.fromInstancesBytes}
	if peer > 0 {
		in.tuplesIn, in.bytesIn = &s.c.fromPeersTuples, &s.c.fromPeersBytes
	}
	return in
}

// readLoop reads frames from a connection and handles them until the
// connection fails (see inbound). It returns the error that ended the
// connection; a control frame on a data connection is a protocol error.
// A spout's connection is not read while back pressure is on (until stop
// is closed).
func (s *StMgr) readLoop(ctx context.Context, br *bufio.Reader, in *inbound, stop <-chan struct{}) error {
	for {
		if !in.wait(ctx, stop) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		}
		f := s.getFrame()
		t, payload, buf, err := wire.ReadFrame(br, f.body, s.set.maxFrame)
		f.body = buf
		if err != nil {
			s.putFrame(f)
			return err
		}
		if err := in.handle(ctx, f, t, payload); err != nil {
			return err
		}
	}
}

// wait holds a spout's frames while back pressure is on (not in drop
// mode); false when ctx ended or stop was closed first.
func (in *inbound) wait(ctx context.Context, stop <-chan struct{}) bool {
	s := in.s
	if in.td != nil && in.td.spout.Load() && !s.dropMode.Load() {
		return s.waitUnthrottled(ctx, stop)
	}
	return true
}

// handle acts on one frame read from the connection: f.body holds the
// frame's type byte and payload; handle owns f.
func (in *inbound) handle(ctx context.Context, f *frame, t wire.FrameType, payload []byte) error {
	s, td := in.s, in.td
	fromPeer := in.peer > 0
	f.epoch = in.epoch
	switch {
	case t == wire.FrameBarrier:
		b, err := wire.ParseBarrier(payload)
		if err != nil {
			s.putFrame(f)
			return err
		}
		f.body = f.body[:len(payload)+1]
		return s.route(ctx, f, b.Dest, 0, fromPeer)
	case t == wire.FrameEpoch && fromPeer:
		e, err := wire.ParseEpoch(payload)
		s.putFrame(f)
		if err != nil {
			return err
		}
		in.epoch = max(in.epoch, e)
		return nil
	case td != nil && t >= wire.FrameStartCheckpoint && t <= wire.FrameResetTopologyState:
		m, err := wire.DecodeMessage(t, payload)
		s.putFrame(f)
		if err != nil {
			return err
		}
		in.epoch, err = s.handleInstanceCheckpoint(td, m, in.epoch)
		return err
	case t == wire.FrameBackPressure && fromPeer:
		ann, err := wire.ParseBackPressure(payload)
		s.putFrame(f)
		if err != nil {
			return err
		}
		if ann.Container != in.peer {
			return fmt.Errorf("%w: stmgr %d sent a back pressure state for container %d", wire.ErrCorrupt, in.peer, ann.Container)
		}
		s.peerState(in.peer, ann)
		return nil
	case wire.IsAckFrame(t):
		err := s.handleAcks(ctx, t, payload, in.peer, td, &in.acks)
		s.putFrame(f)
		return err
	case t != wire.FrameData:
		s.putFrame(f)
		return fmt.Errorf("%w: unexpected %s frame on a data connection", wire.ErrCorrupt, t)
	}
	dest, count, _, err := wire.ParseDataFrame(payload)
	if err != nil {
		s.putFrame(f)
		return err
	}
	f.body = f.body[:len(payload)+1]
	in.tuplesIn.Add(int64(count))
	in.bytesIn.Add(int64(len(f.body) + 4))
	if td != nil && td.spout.Load() && s.bp.throttled.Load() && s.dropMode.Load() {
		// Drop mode: the spout keeps running; what it emits while
		// back pressure is on is dropped here.
		s.c.droppedBackPressure.Add(int64(count))
		s.putFrame(f)
		return nil
	}
	return s.route(ctx, f, dest, int64(count), fromPeer)
}

// route queues f toward its destination task: the task's own queue when
// it is local, else the queue of the peer stream manager of its
// container. It blocks while a connected destination's queue is full and
// drops (counting the tuples lost) when a disconnected destination's queue
// is full or the task is unknown. It fails only when ctx ends.
func (s *StMgr) route(ctx context.Context, f *frame, task uint32, count int64, fromPeer bool) error {
	rt := s.table.Load()
	if rt == nil {
		// No physical plan yet: hold the reader (and so its sender).
		select {
		case <-s.planReady:
			rt = s.table.Load()
		case <-ctx.Done():
			s.putFrame(f)
			return ctx.Err()
		}
	}
	var d *dest
	toPeer := false
	if int(task) < len(rt.local) && rt.local[task] != nil {
		if s.eo.on.Load() {
			return s.deliverLocal(ctx, rt.local[task], f, count)
		}
		d = &rt.local[task].dest
	} else if !fromPeer && int(task) < len(rt.container) {
		if c := rt.container[task]; c > 0 && int(c) < len(rt.peers) && rt.peers[c] != nil {
			d = &rt.peers[c].dest
			toPeer = true
		}
	}
	if d == nil && fromPeer {
		if td := s.heldTask(task); td != nil {
			d = &td.dest
		}
	}
	if d == nil {
		s.c.lost.Add(count)
		s.c.unroutable.Add(count)
		s.putFrame(f)
		s.warnUnroutable(task, fromPeer)
		return nil
	}
	return s.push(ctx, d, f, count, toPeer)
}

// maxHeldTasks bounds the task queues a stream manager keeps, held
// queues included.
const maxHeldTasks = 4096

// heldTask returns the queue that holds a peer's frames for a task the
// current plan does not place here. During a rescale the peers apply the
// new physical plan at slightly different moments: a peer that has it
// may route to a task the new plan adds to this container before this
// stream manager has it. The frames wait in the task's queue (up to its
// bound, like those of an instance not yet connected) for the plan and
// the instance; a plan that does not place the task here discards them
// (applyPlan), counting them lost.
func (s *StMgr) heldTask(task uint32) *taskDest {
	if task > maxTaskID {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	td := s.tasks[int32(task)]
	if td == nil {
		if len(s.tasks) >= maxHeldTasks {
			return nil
		}
		td = s.newTaskDest(int32(task))
		s.tasks[int32(task)] = td
	}
	return td
}

// push queues f on d, blocking while a live destination is full; a full
// or closed queue (a dead destination) drops it, counting the tuples lost.
// It fails only when ctx ends.
func (s *StMgr) push(ctx context.Context, d *dest, f *frame, count int64, toPeer bool) error {
	err := d.q.Push(ctx, f)
	switch {
	case err == nil:
		s.afterPush(d, toPeer)
		return nil
	case errors.Is(err, wire.ErrQueueFull), errors.Is(err, wire.ErrQueueClosed):
		d.lost.Add(count)
		s.c.lost.Add(count)
		s.putFrame(f)
		return nil
	default:
		s.putFrame(f)
		return err
	}
}

// warnUnroutable logs frames for unknown tasks at most once a second.
func (s *StMgr) warnUnroutable(task uint32, fromPeer bool) {
	now := time.Now().UnixNano()
	last := s.c.lastUnroutableLog.Load()
	if now-last < int64(time.Second) || !s.c.lastUnroutableLog.CompareAndSwap(last, now) {
		return
	}
	s.log.Warn("dropping tuples for a task this stream manager cannot route (not in the physical plan, or sent by a peer for a task that is not local)",
		zap.Uint32("task", task), zap.Bool("from_peer", fromPeer), zap.Int64("tuples_unroutable_total", s.c.unroutable.Load()))
}

// writeLoop writes d's queue to w until stop is closed or a write fails.
// A connection's writer batches frames in a buffer of
// egret.stmgr.batch.max.bytes; it is flushed whenever the queue is empty
// (adaptive flushing: at once when idle, full buffers under load). plan, when not nil, is a slot holding a
// physical plan to forward: it is written before the data queued after it.
func (s *StMgr) writeLoop(w frameWriter, d *dest, stop <-chan struct{}, plan *atomic.Pointer[egretpb.PhysicalPlan], toPeer, planned bool) error {
	tuplesOut, bytesOut := &s.c.toInstancesTuples, &s.c.toInstancesBytes
	if toPeer {
		tuplesOut, bytesOut = &s.c.toPeersTuples, &s.c.toPeersBytes
	}
	batch := wire.CacheLineSlice[*frame]()
	var msg []byte
	for {
		if plan != nil {
			if pp := plan.Swap(nil); pp != nil {
				var err error
				if msg, err = wire.AppendMessage(msg[:0], &egretpb.NewPhysicalPlan{Pplan: pp}); err != nil {
					return err
				}
				if err := w.writeFramed(msg); err != nil {
					return err
				}
				planned = true
			}
		}
		if !planned {
			// An instance gets no data before a plan that places it (its
			// queue may hold frames a peer routed by a newer plan).
			select {
			case <-d.q.Ready():
				continue
			case <-stop:
				return nil
			}
		}
		if b := d.ctl.Swap(nil); b != nil {
			if err := w.writeFramed(*b); err != nil {
				return err
			}
		}
		batch = d.q.PopAll(batch[:0])
		if len(batch) == 0 {
			if err := w.flush(); err != nil {
				return err
			}
			select {
			case <-d.q.Ready():
				continue
			case <-stop:
				return nil
			}
		}
		var size, tuples int64
		epoch := int64(0)
		if toPeer && s.eo.on.Load() {
			epoch = s.eo.epoch.Load()
		}
		for i, f := range batch {
			if f.epoch < epoch {
				// Read in an epoch a restore has ended: fenced.
				size += int64(frameSize(f))
				s.eo.fenced.Add(1)
				s.putFrame(f)
				continue
			}
			if err := w.writeFrame(f.body); err != nil {
				drop := s.dropFrame(d)
				for _, g := range batch[i:] {
					size += int64(frameSize(g))
					drop(g)
				}
				clear(batch)
				d.q.Release(int(size))
				return err
			}
			size += int64(frameSize(f))
			tuples += frameTuples(f)
			s.putFrame(f)
		}
		clear(batch)
		d.q.Release(int(size))
		s.afterRelease(d)
		d.tuples.Add(tuples)
		d.bytes.Add(size)
		tuplesOut.Add(tuples)
		bytesOut.Add(size)
	}
}

// frameWriter is where writeLoop puts frames: a connection's buffered
// writer, or the handler of an instance in this process (directWriter).
type frameWriter interface {
	// writeFramed writes complete frames, length prefixes included.
	writeFramed(b []byte) error
	// writeFrame writes one frame body (type byte and payload).
	writeFrame(body []byte) error
	// flush sends what is buffered.
	flush() error
}

// connWriter is the frameWriter of a connection.
type connWriter struct {
	bw  *bufio.Writer
	hdr []byte
}

func (s *StMgr) newConnWriter(conn net.Conn) *connWriter {
	return &connWriter{bw: bufio.NewWriterSize(conn, s.set.batchMax)}
}

func (w *connWriter) writeFramed(b []byte) error {
	_, err := w.bw.Write(b)
	return err
}

func (w *connWriter) writeFrame(body []byte) error {
	w.hdr = wire.AppendLength(w.hdr[:0], len(body))
	if _, err := w.bw.Write(w.hdr); err != nil {
		return err
	}
	_, err := w.bw.Write(body)
	return err
}

func (w *connWriter) flush() error {
	if w.bw.Buffered() == 0 {
		return nil
	}
	return w.bw.Flush()
}

// applyPlan installs a physical plan: it rebuilds the routing table,
// creates the queues of new local tasks, starts, moves or stops peer
// connections, and forwards the plan to connected instances.
//
// Plan versions only grow: a plan whose version is not above the current
// one is a duplicate (the topology manager sends a new plan both in its
// registration response and in its broadcast) and is ignored, except in a
// registration response (fromRegistration), which is authoritative: a
// topology manager that lost its plan history starts versions again.
func (s *StMgr) applyPlan(pp *egretpb.PhysicalPlan, fromRegistration bool) {
	if err := s.checkPlan(pp); err != nil {
		s.log.Error("ignoring a physical plan", zap.Error(err))
		return
	}
	own := int32(s.cfg.Container)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.runCtx == nil {
		return
	}
	if cur := s.pplan; cur != nil && pp.GetVersion() <= cur.GetVersion() {
		if !fromRegistration || pp.GetVersion() == cur.GetVersion() {
			s.log.Debug("ignoring a physical plan that is not newer", zap.Uint64("version", pp.GetVersion()), zap.Uint64("current", cur.GetVersion()))
			return
		}
		s.log.Warn("the topology manager sent an older plan version at registration; adopting it", zap.Uint64("version", pp.GetVersion()), zap.Uint64("current", cur.GetVersion()))
	}
	s.pplan = pp
	rt := &routes{}
	inPlan := false
	for _, loc := range pp.GetStmgrs() {
		if loc.GetContainer() == own {
			inPlan = true
		}
	}
	if !inPlan {
		s.log.Error("this stream manager's container is not in the physical plan; nothing will be routed to it", zap.Uint64("version", pp.GetVersion()))
	}
	local := map[int32]bool{}
	var localSpouts []int32
	spouts := map[string]bool{}
	for _, comp := range pp.GetTopology().GetComponents() {
		if comp.GetKind() == egretpb.ComponentKind_COMPONENT_KIND_SPOUT {
			spouts[comp.GetName()] = true
		}
	}
	for _, c := range pp.GetPacking().GetContainers() {
		for _, in := range c.GetInstances() {
			task := in.GetTaskId()
			for int(task) >= len(rt.container) {
				rt.container = append(rt.container, 0)
				rt.local = append(rt.local, nil)
			}
			rt.container[task] = c.GetId()
			if c.GetId() == own {
				local[task] = true
				td := s.tasks[task]
				if td == nil {
					td = s.newTaskDest(task)
					s.tasks[task] = td
				}
				td.spout.Store(spouts[in.GetComponent()])
				rt.local[task] = td
				if spouts[in.GetComponent()] {
					localSpouts = append(localSpouts, task)
				}
			}
		}
	}
	for id, td := range s.tasks {
		if !local[id] && td.conn == nil {
			delete(s.tasks, id)
			td.q.Close()
			td.q.Discard(s.dropFrame(&td.dest))
		}
	}
	seen := map[int32]bool{}
	for _, loc := range pp.GetStmgrs() {
		c := loc.GetContainer()
		if c == own {
			continue
		}
		seen[c] = true
		addr := net.JoinHostPort(loc.GetHost(), fmt.Sprint(loc.GetDataPort()))
		p := s.peers[c]
		if p == nil {
			p = s.newPeer(c, addr)
			s.peers[c] = p
			ctx, cancel := context.WithCancel(s.runCtx)
			p.cancel = cancel
			s.wg.Add(1)
			go s.runPeer(ctx, p)
		} else {
			p.setAddr(addr)
		}
		for int(c) >= len(rt.peers) {
			rt.peers = append(rt.peers, nil)
		}
		rt.peers[c] = p
	}
	for c, p := range s.peers {
		if !seen[c] {
			delete(s.peers, c)
			p.cancel()
		}
	}
	ps, err := settingsOf(pp)
	if err != nil {
		s.log.Error("cannot read the settings of the physical plan's topology; no acking ledgers, no drop mode", zap.Error(err))
	}
	s.dropMode.Store(ps.dropMode)
	s.updateAckers(ps, rt, localSpouts)
	s.applyCheckpointPlan(ps.logical, rt, pp)
	for id, td := range s.tasks {
		// An instance only gets plans that place it here; one started for
		// a newer packing plan waits for its plan.
		if td.conn != nil && local[id] {
			td.conn.plan.Store(pp)
			td.q.Signal()
		}
	}
	first := s.table.Load() == nil
	s.table.Store(rt)
	if first {
		close(s.planReady)
	}
	s.c.planVersion.Store(pp.GetVersion())
	s.log.Info("physical plan applied", zap.Uint64("version", pp.GetVersion()), zap.Int("local_tasks", len(local)), zap.Int("peers", len(seen)), zap.String("state", pp.GetState().String()))
}

// checkPlan rejects a plan of another topology or one whose ids would
// make the routing table unreasonably large.
func (s *StMgr) checkPlan(pp *egretpb.PhysicalPlan) error {
	if pp == nil {
		return errors.New("empty physical plan")
	}
	if id := pp.GetTopology().GetId(); id != "" && id != s.cfg.TopologyID {
		return fmt.Errorf("plan of topology id %q, this stream manager serves %q", id, s.cfg.TopologyID)
	}
	if id := pp.GetPacking().GetTopologyId(); id != "" && id != s.cfg.TopologyID {
		return fmt.Errorf("packing plan of topology id %q, this stream manager serves %q", id, s.cfg.TopologyID)
	}
	for _, c := range pp.GetPacking().GetContainers() {
		if c.GetId() < 1 || c.GetId() > maxContainer {
			return fmt.Errorf("container id %d out of range 1..%d", c.GetId(), maxContainer)
		}
		for _, in := range c.GetInstances() {
			if in.GetTaskId() < 0 || in.GetTaskId() > maxTaskID {
				return fmt.Errorf("task id %d out of range 0..%d", in.GetTaskId(), maxTaskID)
			}
		}
	}
	for _, loc := range pp.GetStmgrs() {
		if loc.GetContainer() < 1 || loc.GetContainer() > maxContainer {
			return fmt.Errorf("stream manager container id %d out of range 1..%d", loc.GetContainer(), maxContainer)
		}
	}
	return nil
}

func (s *StMgr) newTaskDest(task int32) *taskDest {
	td := &taskDest{task: task}
	td.name = fmt.Sprintf("task %d", task)
	td.q = wire.NewQueue(s.set.bufferMax, frameSize)
	td.q.SetBlocking(false) // until its instance connects
	td.starting.Store(true)
	return td
}
