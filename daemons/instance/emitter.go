package instance

import (
	"errors"
	"fmt"
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/core/tuple"
	"github.com/egret-stream/egret/daemons/wire"
)

// emitter encodes emitted tuples once, computes their destinations and
// appends them to per-destination batches.
type emitter struct {
	in      *Instance
	routes  map[string]*route
	out     []*wire.Batch // pending batch per destination task id
	pending []uint32      // destinations with a pending batch
	since   time.Time     // when the oldest pending tuple was added
	checks  int           // emits since the clock was last read
	scratch []byte
	dests   []int
	hdr     wire.Header
	// ack is the at-least-once state; nil in other modes.
	ack *ackState
	// linger is set on a spout: its batches are not sent the moment the
	// path is idle but when full, when the spout is idle and the oldest
	// tuple waited the flush interval, or when it must wait for acks
	// (see runSpout). A bolt flushes after every input batch instead.
	linger bool
	// last is the route of the last emit, to skip the map lookup when
	// a component emits on one stream.
	lastStream string
	last       *route
	// Counts since the start (emitted is also how runSpout sees that
	// NextTuple emitted) and the parts of them already published.
	emitted, sent, nextTuples int64
	published                 [3]int64
}

// publish adds the counts kept by the emitter to the instance's metrics.
// The hot path counts in plain fields; they are published with every
// batch sent, every flush and every flushCheckEvery emits.
func (e *emitter) publish() {
	m := e.in.metrics
	if d := e.emitted - e.published[0]; d != 0 {
		m.Emitted.Add(d)
	}
	if d := e.sent - e.published[1]; d != 0 {
		m.Sent.Add(d)
	}
	if d := e.nextTuples - e.published[2]; d != 0 {
		m.NextTuples.Add(d)
	}
	if e.ack != nil && e.ack.spout != nil {
		m.PendingRoots.Store(int64(e.ack.spout.n))
	}
	e.published = [3]int64{e.emitted, e.sent, e.nextTuples}
}

// noDirect marks an emit that is not an EmitDirect.
const noDirect = math.MinInt

func (e *emitter) emit(stream string, values []any, direct int, msgID any, anchors []api.Tuple) {
	if err := e.route(stream, values, direct, msgID, anchors); err != nil {
		e.in.metrics.Dropped.Add(1)
		e.reportError(err)
	}
}

// emitTasks is emit returning a copy of the destination task ids.
func (e *emitter) emitTasks(stream string, values []any, msgID any, anchors []api.Tuple) []int {
	if err := e.route(stream, values, noDirect, msgID, anchors); err != nil {
		e.in.metrics.Dropped.Add(1)
		e.reportError(err)
		return []int{}
	}
	return append([]int{}, e.dests...)
}

func (e *emitter) route(stream string, values []any, direct int, msgID any, anchors []api.Tuple) error {
	e.emitted++
	r := e.last
	if r == nil || stream != e.lastStream {
		r = e.routes[stream]
		e.last, e.lastStream = r, stream
	}
	if r == nil {
		return fmt.Errorf("emit on stream %q, which component %q does not declare", stream, e.in.comp.Name)
	}
	if len(values) != len(r.info.Fields) {
		return fmt.Errorf("emit on stream %q with %d values; the stream declares %d fields %v", stream, len(values), len(r.info.Fields), r.info.Fields)
	}
	e.dests = e.dests[:0]
	if direct != noDirect {
		if !r.info.Direct {
			return fmt.Errorf("EmitDirect on stream %q, which is not declared direct", stream)
		}
		if !e.directTarget(r, direct) {
			return fmt.Errorf("EmitDirect to task %d, which does not subscribe to stream %q", direct, stream)
		}
		e.dests = append(e.dests, direct)
	} else {
		if r.info.Direct {
			return fmt.Errorf("emit on direct stream %q: use EmitDirect", stream)
		}
		for _, tg := range r.targets {
			var err error
			if e.dests, err = tg.choose(values, e.dests); err != nil {
				return err
			}
		}
	}
	if len(e.dests) == 0 {
		if e.ack != nil && msgID != nil && e.ack.spout != nil {
			// Nobody subscribes: the tree is complete at once.
			e.ack.spout.ackNow(msgID)
		}
		return nil
	}
	e.hdr.SrcTask = uint32(e.in.cfg.TaskID)
	e.hdr.Stream = r.index
	if e.ack == nil && len(e.dests) == 1 {
		// One untracked copy: encoded in place in its batch.
		dest := uint32(e.dests[0])
		b := e.batch(dest)
		buf, start := wire.BeginRecord(b.Buf, &e.hdr)
		buf, err := tuple.AppendValues(buf, values, e.in.cfg.Types)
		if err != nil {
			// b.Buf still ends before the partial record.
			return fmt.Errorf("encode tuple on stream %q: %w", stream, err)
		}
		b.Buf = wire.EndRecord(buf, start)
		e.added(dest, b)
		return nil
	}
	var err error
	e.scratch, err = tuple.AppendValues(e.scratch[:0], values, e.in.cfg.Types)
	if err != nil {
		return fmt.Errorf("encode tuple on stream %q: %w", stream, err)
	}
	if e.ack != nil {
		e.ack.track(e, msgID, anchors)
		for i, d := range e.dests {
			e.hdr.Edge = e.ack.edges[i]
			e.append(uint32(d))
		}
		return nil
	}
	for _, d := range e.dests {
		e.append(uint32(d))
	}
	return nil
}

func (e *emitter) directTarget(r *route, task int) bool {
	for _, tg := range r.targets {
		if containsInt(tg.tasks, task) {
			return true
		}
	}
	return false
}

// append adds the tuple encoded in scratch, with hdr, to dest's batch.
func (e *emitter) append(dest uint32) {
	b := e.batch(dest)
	b.Buf = wire.AppendRecord(b.Buf, &e.hdr, e.scratch)
	e.added(dest, b)
}

// batch returns the batch being filled toward dest, starting one.
func (e *emitter) batch(dest uint32) *wire.Batch {
	b := e.out[dest]
	if b == nil {
		b = e.in.cfg.Transport.NewBatch(dest)
		e.out[dest] = b
		if len(e.pending) == 0 {
			e.since = time.Now()
		}
		e.pending = append(e.pending, dest)
	}
	return b
}

// added counts a record appended to dest's batch b and sends b when it is
// full or the path is idle.
func (e *emitter) added(dest uint32, b *wire.Batch) {
	b.Count++
	e.sent++
	// The path's idleness is checked when the batch holds 1, 2, 4, 8...
	// tuples: a tuple emitted toward an idle path leaves at once, and a
	// busy path costs a few checks per batch, not one per tuple (the
	// flush interval bounds the wait of the others).
	if len(b.Buf) >= e.in.cfg.BatchBytes || (!e.linger && b.Count&(b.Count-1) == 0 && e.in.cfg.Transport.Idle(dest)) {
		e.flush(dest)
	}
}

func (e *emitter) flush(dest uint32) {
	b := e.out[dest]
	if b == nil {
		return
	}
	e.out[dest] = nil
	for i, d := range e.pending {
		if d == dest {
			e.pending = append(e.pending[:i], e.pending[i+1:]...)
			break
		}
	}
	e.send(b)
}

func (e *emitter) send(b *wire.Batch) {
	e.publish()
	if e.ack != nil {
		// Registrations of new roots must reach the ledger before the
		// tuples that could ack them.
		e.ack.flush(e)
	}
	if err := e.in.cfg.Transport.Send(e.in.ctx, b); err != nil {
		e.in.metrics.Dropped.Add(int64(b.Count))
		e.in.log.Debug("batch not sent", zap.Uint32("dest", b.Dest), zap.Int("tuples", b.Count), zap.Error(err))
		return
	}
	e.in.metrics.Batches.Add(1)
}

// flushAll sends every pending batch.
func (e *emitter) flushAll() {
	for _, d := range e.pending {
		b := e.out[d]
		e.out[d] = nil
		e.send(b)
	}
	e.pending = e.pending[:0]
	if e.ack != nil {
		e.ack.flush(e)
	}
	e.publish()
}

// lingerLeft is how much longer the oldest pending tuple may wait for
// others to join its batch (0 when nothing is pending or it waited
// interval already).
func (e *emitter) lingerLeft(interval time.Duration) time.Duration {
	if len(e.pending) == 0 {
		return 0
	}
	return max(interval-time.Since(e.since), 0)
}

// flushIfDue sends the pending batches when the oldest has waited longer
// than interval; it reads the clock only every flushCheckEvery emits.
func (e *emitter) flushIfDue(interval time.Duration) {
	if e.checks++; e.checks < flushCheckEvery {
		return
	}
	e.checks = 0
	e.publish()
	if len(e.pending) > 0 && time.Since(e.since) >= interval {
		e.flushAll()
	}
}

func (e *emitter) reportError(err error) {
	e.in.metrics.Errors.Add(1)
	msg := "<nil>"
	if err != nil {
		msg = err.Error()
	}
	// The stack starts at the user code that called ReportError, unless
	// the error carries its own (a subprocess's traceback).
	stack := ""
	var se interface{ StackTrace() string }
	if errors.As(err, &se) {
		stack = se.StackTrace()
	}
	if stack == "" {
		stack = CallerStack(2)
	}
	e.in.metrics.AddException(msg, stack, time.Now())
	e.in.log.Warn("component error", zap.Error(err))
}

type spoutCollector struct{ em *emitter }

func (c *spoutCollector) Emit(values api.Values, msgID any) {
	c.em.emit(defaultStream, values, noDirect, msgID, nil)
}

func (c *spoutCollector) EmitStream(stream string, values api.Values, msgID any) {
	c.em.emit(stream, values, noDirect, msgID, nil)
}

func (c *spoutCollector) EmitDirect(task int, stream string, values api.Values, msgID any) {
	c.em.emit(stream, values, task, msgID, nil)
}

func (c *spoutCollector) EmitTasks(stream string, values api.Values, msgID any) []int {
	return c.em.emitTasks(stream, values, msgID, nil)
}

func (c *spoutCollector) ReportError(err error) { c.em.reportError(err) }

type boltCollector struct{ em *emitter }

func (c *boltCollector) Emit(values api.Values, anchors ...api.Tuple) {
	c.em.emit(defaultStream, values, noDirect, nil, anchors)
}

func (c *boltCollector) EmitStream(stream string, values api.Values, anchors ...api.Tuple) {
	c.em.emit(stream, values, noDirect, nil, anchors)
}

func (c *boltCollector) EmitDirect(task int, stream string, values api.Values, anchors ...api.Tuple) {
	c.em.emit(stream, values, task, nil, anchors)
}

func (c *boltCollector) EmitTasks(stream string, values api.Values, anchors ...api.Tuple) []int {
	return c.em.emitTasks(stream, values, nil, anchors)
}

// Ack acks t's trees (at-least-once mode; a no-op otherwise).
func (c *boltCollector) Ack(t api.Tuple) {
	if c.em.ack != nil {
		c.em.ack.ackInput(c.em, t, false)
	}
}

// Fail fails t's trees at once (at-least-once mode; a no-op otherwise).
func (c *boltCollector) Fail(t api.Tuple) {
	if c.em.ack != nil {
		c.em.ack.ackInput(c.em, t, true)
	}
}

func (c *boltCollector) ReportError(err error) { c.em.reportError(err) }

const defaultStream = "default"

type userContext struct{ in *Instance }

func (c *userContext) TopologyName() string  { return c.in.cfg.Topology.Logical.Name }
func (c *userContext) TopologyID() string    { return c.in.cfg.Topology.Logical.ID }
func (c *userContext) ComponentName() string { return c.in.comp.Name }
func (c *userContext) TaskID() int           { return c.in.cfg.TaskID }
func (c *userContext) TaskIndex() int        { return c.in.cfg.Layout.IndexOf[c.in.cfg.TaskID] }
func (c *userContext) ComponentTasks(component string) []int {
	return append([]int(nil), c.in.cfg.Layout.Tasks[component]...)
}
func (c *userContext) Config(key string) string {
	return c.in.cfg.Topology.Logical.Setting(c.in.comp.Name, key)
}
func (c *userContext) Logger() *zap.Logger              { return c.in.log }
func (c *userContext) Counter(name string) *api.Counter { return c.in.metrics.Counter(name) }
func (c *userContext) Topology() *topology.Topology     { return c.in.cfg.Topology.Logical }
func (c *userContext) ResourcesDir() string             { return c.in.cfg.ResourcesDir }

var (
	_ api.SpoutTaskEmitter = (*spoutCollector)(nil)
	_ api.BoltTaskEmitter  = (*boltCollector)(nil)
)
