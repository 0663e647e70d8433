package api

import (
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/multilang"
)

// maxOutstanding bounds the spout commands (acks and fails) sent without
// waiting for their syncs.
const maxOutstanding = 128

// maxPump bounds the messages one Pump handles, so that a busy
// subprocess does not starve the task's other work.
const maxPump = 1024

// shellMsgID is the message id of a shell spout's tuple: the id's JSON
// text and the process generation that emitted it (acks and fails of an
// earlier process's tuples are not passed to its successor).
type shellMsgID struct {
	gen uint64
	id  string
}

// shellSpout is a Spout run by a subprocess. Every command (next, ack,
// fail, activate, deactivate) is answered by a sync; NextTuple, Activate
// and Deactivate wait for every answer, acks and fails are pipelined.
type shellSpout struct {
	shellRunner
	out   SpoutCollector
	tasks SpoutTaskEmitter // nil when the collector cannot return task ids
	syncs int              // answers awaited
}

var _ Spout = (*shellSpout)(nil)

func (s *shellSpout) Open(ctx Context, out SpoutCollector) error {
	s.out = out
	s.tasks, _ = out.(SpoutTaskEmitter)
	return s.open(ctx, out.ReportError)
}

func (s *shellSpout) NextTuple()  { s.command(multilang.CmdNext, "", true) }
func (s *shellSpout) Activate()   { s.command(multilang.CmdActivate, "", true) }
func (s *shellSpout) Deactivate() { s.command(multilang.CmdDeactivate, "", true) }
func (s *shellSpout) Close()      { s.close() }

func (s *shellSpout) Ack(msgID any)  { s.settle(multilang.CmdAck, msgID) }
func (s *shellSpout) Fail(msgID any) { s.settle(multilang.CmdFail, msgID) }

// NotCheckpointed implements NotCheckpointed: the subprocess's state
// (its position in its source, anything it counts) is its own.
func (s *shellSpout) NotCheckpointed() string {
	return "a shell spout: its subprocess keeps its state outside Egret's checkpoints"
}

func (s *shellSpout) DeclareOutputFields(d OutputDeclarer) {
	if s.spec != nil {
		s.spec.declareOutputFields(d)
	}
}

func (s *shellSpout) settle(cmd string, msgID any) {
	id, ok := msgID.(shellMsgID)
	if !ok || id.gen != s.gen || s.proc == nil {
		return // a tuple of a process that has ended
	}
	s.command(cmd, id.id, false)
}

// command sends a command; with wait it handles the subprocess's
// messages until every command is answered, otherwise only while more
// than maxOutstanding are unanswered.
func (s *shellSpout) command(cmd, idJSON string, wait bool) {
	if !s.ensure(false) {
		return // restarting later
	}
	s.proc.Expect(1)
	if !s.send(multilang.AppendCommand(nil, cmd, idJSON)) {
		s.drain()
		return
	}
	s.syncs++
	target := 0
	if !wait {
		target = maxOutstanding / 2
		if s.syncs < maxOutstanding {
			return
		}
	}
	for s.syncs > target {
		m := s.next(true)
		if m == nil {
			s.drain()
			return
		}
		s.handle(m)
	}
}

// drain handles what an ended process sent and schedules its restart.
func (s *shellSpout) drain() {
	for m := s.next(true); m != nil; m = s.next(true) {
		s.handle(m)
	}
	s.syncs = 0
	s.ended()
}

func (s *shellSpout) handle(m *multilang.Message) {
	switch m.Command {
	case multilang.CmdEmit:
		s.emit(m)
	case multilang.CmdSync:
		if s.syncs > 0 {
			s.syncs--
		}
	default:
		s.common(m)
	}
}

func (s *shellSpout) emit(m *multilang.Message) {
	stream := m.Stream
	if stream == "" {
		stream = topology.DefaultStream
	}
	var msgID any
	if m.ID != nil {
		b, err := multilang.AppendValue(nil, m.ID)
		if err != nil { // parsed JSON always has a JSON form
			panic(err)
		}
		msgID = shellMsgID{gen: s.gen, id: string(b)}
	}
	values := Values(m.Tuple)
	switch {
	case m.HasTask:
		s.out.EmitDirect(m.Task, stream, values, msgID)
	case m.NeedTaskIDs:
		tasks := []int{}
		if s.tasks != nil {
			tasks = s.tasks.EmitTasks(stream, values, msgID)
		} else {
			s.out.EmitStream(stream, values, msgID)
		}
		s.send(multilang.AppendTaskIDs(nil, tasks))
	default:
		s.out.EmitStream(stream, values, msgID)
	}
}

// shellBolt is a Bolt run by a subprocess. Execute hands the tuple over
// and returns; the subprocess's emits, acks and fails are handled by Pump,
// which the runtime calls when they arrive.
type shellBolt struct {
	shellRunner
	out     BoltCollector
	tasks   BoltTaskEmitter // nil when the collector cannot return task ids
	pending map[string]Tuple
	nextID  uint64
}

var (
	_ Bolt   = (*shellBolt)(nil)
	_ Pumper = (*shellBolt)(nil)
	_ Syncer = (*shellBolt)(nil)
	_ Holder = (*shellBolt)(nil)
)

func newShellBolt(s *Shell) *shellBolt {
	return &shellBolt{
		shellRunner: shellRunner{spec: s, wake: make(chan struct{}, 1), beats: true},
		pending:     map[string]Tuple{},
	}
}

func (b *shellBolt) Prepare(ctx Context, out BoltCollector) error {
	b.out = out
	b.tasks, _ = out.(BoltTaskEmitter)
	return b.open(ctx, out.ReportError)
}

// NotCheckpointed implements NotCheckpointed.
func (b *shellBolt) NotCheckpointed() string {
	return "a shell bolt: its subprocess keeps its state outside Egret's checkpoints"
}

func (b *shellBolt) DeclareOutputFields(d OutputDeclarer) {
	if b.spec != nil {
		b.spec.declareOutputFields(d)
	}
}

func (b *shellBolt) Cleanup() { b.close() }

// Wake implements Pumper.
func (b *shellBolt) Wake() <-chan struct{} { return b.wake }

// Execute hands t to the subprocess. While no subprocess runs (a restart
// is due later) it waits: the task stops taking tuples, which is back
// pressure.
func (b *shellBolt) Execute(t Tuple) {
	b.ensure(true)
	b.nextID++
	id := strconv.FormatUint(b.nextID, 10)
	msg, err := multilang.AppendTuple(nil, id, t.SourceComponent(), t.SourceStream(), t.SourceTask(), t.Values())
	if err != nil {
		b.report(fmt.Errorf("tuple from %s/%s not given to the subprocess: %w", t.SourceComponent(), t.SourceStream(), err))
		b.out.Fail(t)
		return
	}
	b.pending[id] = t
	if !b.send(msg) {
		b.drain()
	}
}

// Pump implements Pumper: it handles what the subprocess sent, and
// restarts an ended subprocess when due.
func (b *shellBolt) Pump() {
	if b.proc == nil {
		b.ensure(false)
		return
	}
	for range maxPump {
		m := b.next(false)
		if m == nil {
			break
		}
		b.handle(m)
	}
	switch {
	case b.dead():
		b.died()
	case len(b.backlog) > 0 || len(b.proc.In()) > 0:
		select { // more to do: come back after the task's other work
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// Sync implements Syncer with Storm's heartbeat tuple as a barrier: it
// handles what the subprocess sends until it answered the heartbeat, that
// is until every tuple given to it before has been processed and what it
// emitted, acked and failed handed to the collector. A hung subprocess is
// killed at its heartbeat timeout, which ends the wait.
func (b *shellBolt) Sync() {
	if b.proc == nil {
		return // ended: its tuples were failed
	}
	retry := time.NewTicker(time.Millisecond)
	defer retry.Stop()
	var n uint64
	for {
		var ok bool
		if n, ok = b.proc.AskSync(); ok {
			break
		}
		// The queue toward the subprocess is full: handle what it sends
		// while it makes room.
		if m := b.next(false); m != nil {
			b.handle(m)
			continue
		}
		select {
		case <-retry.C:
		case <-b.proc.Done():
			b.drain()
			return
		}
	}
	for b.syncs < n {
		m := b.next(true)
		if m == nil {
			b.drain()
			return
		}
		b.handle(m)
	}
}

// Held implements Holder: the tuples given to the subprocess that it did
// not ack or fail yet.
func (b *shellBolt) Held() int { return len(b.pending) }

// drain handles what an ended process sent, then fails its tuples.
func (b *shellBolt) drain() {
	for m := b.next(true); m != nil; m = b.next(true) {
		b.handle(m)
	}
	b.died()
}

// died fails the tuples the ended process held (at-least-once: their
// trees replay at once instead of at their timeout) and schedules the
// restart.
func (b *shellBolt) died() {
	for id, t := range b.pending {
		b.out.Fail(t)
		delete(b.pending, id)
	}
	b.ended()
}

func (b *shellBolt) handle(m *multilang.Message) {
	switch m.Command {
	case multilang.CmdEmit:
		b.emit(m)
	case multilang.CmdAck, multilang.CmdFail:
		t, ok := b.pending[m.IDKey]
		if !ok {
			b.warnOnce("the subprocess acked or failed an unknown tuple id", zap.String("command", m.Command), zap.String("id", m.IDKey))
			return
		}
		delete(b.pending, m.IDKey)
		if m.Command == multilang.CmdAck {
			b.out.Ack(t)
		} else {
			b.out.Fail(t)
		}
	default:
		b.common(m)
	}
}

func (b *shellBolt) emit(m *multilang.Message) {
	stream := m.Stream
	if stream == "" {
		stream = topology.DefaultStream
	}
	var anchors []Tuple
	for _, key := range m.Anchors {
		if t, ok := b.pending[key]; ok {
			anchors = append(anchors, t)
		} else {
			b.warnOnce("an emit is anchored to an unknown or already acked tuple id; the anchor is ignored", zap.String("id", key))
		}
	}
	values := Values(m.Tuple)
	switch {
	case m.HasTask:
		b.out.EmitDirect(m.Task, stream, values, anchors...)
	case m.NeedTaskIDs:
		tasks := []int{}
		if b.tasks != nil {
			tasks = b.tasks.EmitTasks(stream, values, anchors...)
		} else {
			b.out.EmitStream(stream, values, anchors...)
		}
		b.send(multilang.AppendTaskIDs(nil, tasks))
	default:
		b.out.EmitStream(stream, values, anchors...)
	}
}
