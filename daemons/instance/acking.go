package instance

import (
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/daemons/wire"
)

// maxAckBatch is how many ack updates a task buffers before sending them.
const maxAckBatch = 1024

// ackState is an instance's at-least-once state (Heron's XOR acking): the
// random edge ids of the copies it sends, the roots its tuples carry, the
// updates waiting to be sent to the ledgers, and, for a spout, its pending
// roots.
type ackState struct {
	rng   *rand.Rand
	edges []uint64    // edge id per destination of the current emit
	roots []wire.Root // roots of the current emit
	owner []*uint64   // per root of the current emit: the anchor slot its edges are XOR-ed into
	inits []wire.AckUpdate
	acks  []wire.AckUpdate
	fails []wire.AckUpdate
	// updates counts the ack and fail updates of input tuples not yet
	// added to the AckUpdates metric (added when they are sent).
	updates int64
	// spout is set on a spout task.
	spout *spoutAcks
	// errLogged limits the log of failing SendAcks calls to one line.
	errLogged bool
}

// nonZero returns a random non-zero id.
func (a *ackState) nonZero() uint64 {
	for {
		if v := a.rng.Uint64(); v != 0 {
			return v
		}
	}
}

// track gives each copy of the current emit (e.dests) an edge id and sets
// the header's roots: a spout emit with a msgID starts a tree; a bolt emit
// joins the trees of its anchors. Untracked emits get no roots and edge 0.
func (a *ackState) track(e *emitter, msgID any, anchors []api.Tuple) {
	a.edges = a.edges[:0]
	a.roots = a.roots[:0]
	a.owner = a.owner[:0]
	if a.spout != nil && msgID != nil {
		var xor uint64
		for range e.dests {
			k := a.nonZero()
			a.edges = append(a.edges, k)
			xor ^= k
		}
		for xor == 0 { // several copies whose ids cancel out: redraw one
			last := len(a.edges) - 1
			xor ^= a.edges[last]
			a.edges[last] = a.nonZero()
			xor ^= a.edges[last]
		}
		root := wire.Root{Task: uint32(e.in.cfg.TaskID), ID: a.spout.add(e.in, msgID)}
		a.roots = append(a.roots, root)
		a.inits = append(a.inits, wire.AckUpdate{Root: root, Xor: xor})
		e.hdr.Roots = a.roots
		return
	}
	for _, t := range anchors {
		it, ok := t.(*inTuple)
		if !ok || it.ack == nil {
			continue
		}
		xors := it.ack.xors()
		for j, r := range it.ack.roots() {
			if containsRoot(a.roots, r) {
				// Another anchor already carries this root: its edges
				// are accounted there, once.
				continue
			}
			a.roots = append(a.roots, r)
			a.owner = append(a.owner, &xors[j])
		}
	}
	if len(a.roots) == 0 {
		for range e.dests {
			a.edges = append(a.edges, 0)
		}
		e.hdr.Roots = nil
		return
	}
	for range e.dests {
		k := a.nonZero()
		a.edges = append(a.edges, k)
		for _, o := range a.owner {
			*o ^= k
		}
	}
	e.hdr.Roots = a.roots
}

func containsRoot(roots []wire.Root, r wire.Root) bool {
	for _, x := range roots {
		if x == r {
			return true
		}
	}
	return false
}

// ackInput acks or fails a bolt's input tuple: for each of its roots, an
// ack carries the tuple's edge XOR the edges emitted anchored on it; a
// fail fails the root at once. A tuple is acked or failed once.
func (a *ackState) ackInput(e *emitter, t api.Tuple, fail bool) {
	it, ok := t.(*inTuple)
	if !ok || it.ack == nil || it.ack.done {
		return
	}
	k := it.ack
	k.done = true
	roots, xors := k.roots(), k.xors()
	for j, r := range roots {
		if fail {
			a.fails = append(a.fails, wire.AckUpdate{Root: r})
		} else {
			a.acks = append(a.acks, wire.AckUpdate{Root: r, Xor: k.edge ^ xors[j]})
		}
	}
	a.updates += int64(len(roots))
	if len(a.acks)+len(a.fails) >= maxAckBatch {
		a.flush(e)
	}
}

// flush sends the buffered updates: registrations first.
func (a *ackState) flush(e *emitter) {
	if a.updates != 0 {
		e.in.metrics.AckUpdates.Add(a.updates)
		a.updates = 0
	}
	a.inits = a.send(e, wire.FrameAckInit, a.inits)
	a.acks = a.send(e, wire.FrameAck, a.acks)
	a.fails = a.send(e, wire.FrameFail, a.fails)
}

func (a *ackState) send(e *emitter, kind wire.FrameType, u []wire.AckUpdate) []wire.AckUpdate {
	if len(u) == 0 {
		return u
	}
	if err := e.in.cfg.Transport.SendAcks(e.in.ctx, kind, u); err != nil {
		e.in.metrics.Errors.Add(1)
		if !a.errLogged {
			a.errLogged = true
			e.in.log.Warn("acking updates not sent; their roots will time out", zap.Stringer("kind", kind), zap.Int("updates", len(u)), zap.Error(err))
		}
	}
	return u[:0]
}

// pendingRoot is a spout tuple tree that is neither acked nor failed; a
// free slot has id 0.
type pendingRoot struct {
	id    uint64
	msgID any
	start time.Time
}

// rootAt is an entry of the insertion-ordered timeout queue.
type rootAt struct {
	slot  uint32
	id    uint64
	start time.Time
}

// spoutAcks are a spout task's pending roots, with max.spout.pending and
// the message timeout enforced here, as in Heron.
//
// Pending roots live in a slot table, not a map: a root id is its slot
// index in the low 32 bits and the slot's reuse generation in the high
// ones, XOR-ed with a random salt of this instance, so a result finds its
// root by indexing and a stale result (a settled root whose slot was
// reused, or a root of a previous process of this task) does not match.
type spoutAcks struct {
	slots      []pendingRoot
	free       []uint32
	n          int    // pending roots
	gen        uint64 // generation of the next root
	salt       uint64
	order      []rootAt // insertion (hence start time) order; may hold settled entries
	head       int
	maxPending int
	timeout    time.Duration
	now        func() time.Time
	// clock is the start time given to new roots: read once per
	// NextTuple call (refresh), not per emit, since a clock read costs as
	// much as the rest of the bookkeeping.
	clock time.Time
	// local are results decided in the instance (a tree without copies).
	local []localResult
}

type localResult struct{ msgID any }

func newSpoutAcks(maxPending int, timeout time.Duration, now func() time.Time, salt uint64) *spoutAcks {
	return &spoutAcks{maxPending: maxPending, timeout: timeout, now: now, salt: salt}
}

// add records a new pending root and returns its id (never 0).
func (s *spoutAcks) add(in *Instance, msgID any) uint64 {
	var slot uint32
	if n := len(s.free); n > 0 {
		slot, s.free = s.free[n-1], s.free[:n-1]
	} else {
		slot = uint32(len(s.slots))
		s.slots = append(s.slots, pendingRoot{})
	}
	var id uint64
	for id == 0 {
		s.gen++
		id = (s.gen<<32 | uint64(slot)) ^ s.salt
	}
	if s.clock.IsZero() {
		s.refresh()
	}
	now := s.clock
	s.slots[slot] = pendingRoot{id: id, msgID: msgID, start: now}
	s.n++
	s.order = append(s.order, rootAt{slot: slot, id: id, start: now})
	return id
}

// lookup returns the slot of pending root id, or false.
func (s *spoutAcks) lookup(id uint64) (uint32, bool) {
	slot := uint32(id ^ s.salt)
	if int(slot) >= len(s.slots) || s.slots[slot].id != id {
		return 0, false
	}
	return slot, true
}

// release frees a slot and returns what it held.
func (s *spoutAcks) release(slot uint32) pendingRoot {
	p := s.slots[slot]
	s.slots[slot] = pendingRoot{}
	s.free = append(s.free, slot)
	s.n--
	return p
}

// refresh reads the clock for the roots added next.
func (s *spoutAcks) refresh() { s.clock = s.now() }

func (s *spoutAcks) ackNow(msgID any) { s.local = append(s.local, localResult{msgID: msgID}) }

// full reports whether NextTuple must wait for acks.
func (s *spoutAcks) full() bool { return s.maxPending > 0 && s.n >= s.maxPending }

// settled counts the results of one MsgAckResults message, added to the
// instance's metrics once per message instead of once per root.
type settled struct{ acked, failed, latencyNanos int64 }

// publish adds the counts to m, with the pending roots left.
func (c *settled) publish(m *Metrics, pending int) {
	m.PendingRoots.Store(int64(pending))
	if c.acked > 0 {
		m.Acked.Add(c.acked)
		m.CompleteLatencyNanos.Add(c.latencyNanos)
		m.CompleteLatencyCount.Add(c.acked)
	}
	if c.failed > 0 {
		m.Failed.Add(c.failed)
	}
}

// settle applies a ledger's result received at now; it returns the msgID
// and whether the root was still pending (a late result of a timed-out
// root is ignored). The result is counted in c.
func (s *spoutAcks) settle(in *Instance, r wire.AckResult, now time.Time, c *settled) (any, bool) {
	slot, ok := s.lookup(r.Root.ID)
	if !ok || r.Root.Task != uint32(in.cfg.TaskID) {
		return nil, false
	}
	p := s.release(slot)
	if r.Acked {
		d := max(now.Sub(p.start), 0)
		c.acked++
		c.latencyNanos += int64(d)
		in.metrics.CompleteLatency.Observe(d, 1)
	} else {
		c.failed++
	}
	s.compact()
	return p.msgID, true
}

// expire removes the roots pending longer than the timeout, tells their
// ledger to drop them, and returns their msgIDs.
func (s *spoutAcks) expire(in *Instance, a *ackState, out []any) []any {
	if s.n == 0 {
		clear(s.order)
		s.order, s.head = s.order[:0], 0
		return out
	}
	now := s.now()
	s.clock = now // for what Fail emits
	for s.head < len(s.order) {
		ro := s.order[s.head]
		if s.slots[ro.slot].id == ro.id {
			if now.Sub(ro.start) < s.timeout {
				break
			}
			p := s.release(ro.slot)
			out = append(out, p.msgID)
			a.fails = append(a.fails, wire.AckUpdate{Root: wire.Root{Task: uint32(in.cfg.TaskID), ID: ro.id}})
			in.metrics.TimedOut.Add(1)
		}
		s.order[s.head] = rootAt{}
		s.head++
	}
	in.metrics.PendingRoots.Store(int64(s.n))
	s.compact()
	return out
}

// compact bounds the timeout queue: consumed entries are dropped, and so
// are settled ones when they dominate.
func (s *spoutAcks) compact() {
	if s.head > 1024 && s.head > len(s.order)/2 {
		n := copy(s.order, s.order[s.head:])
		clear(s.order[n:])
		s.order, s.head = s.order[:n], 0
	}
	if live := len(s.order) - s.head; live > 1024 && live > 4*s.n {
		kept := s.order[:0]
		for _, ro := range s.order[s.head:] {
			if s.slots[ro.slot].id == ro.id {
				kept = append(kept, ro)
			}
		}
		clear(s.order[len(kept):])
		s.order, s.head = kept, 0
	}
}
