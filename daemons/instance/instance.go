package instance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/core/tuple"
	"github.com/egret-stream/egret/daemons/wire"
)

// Defaults of the batching settings.
const (
	DefaultBatchBytes    = 32 << 10
	DefaultFlushInterval = 250 * time.Microsecond
	maxIdleWait          = time.Millisecond
	executeSample        = 64
	// spoutBurst is how many NextTuple calls run back to back while each
	// emits (see produce).
	spoutBurst = 64
	// flushCheckEvery is how many emits pass between two looks at the
	// clock for FlushInterval.
	flushCheckEvery = 64
)

// Config describes one instance.
type Config struct {
	Topology *api.Topology
	Layout   *plan.Layout
	// Streams is the topology's stream table (derived when nil).
	Streams   *wire.StreamTable
	TaskID    int
	Transport Transport
	Logger    *zap.Logger
	// Metrics receives the instance's counters (allocated when nil).
	Metrics *Metrics
	// Types holds codecs of user value types (default: the topology's).
	Types *tuple.Registry
	// StartActive starts a spout emitting; otherwise it waits for
	// MsgActivate.
	StartActive bool
	// BatchBytes is the size at which a destination's batch is sent.
	BatchBytes int
	// FlushInterval bounds how long a spout's tuple waits in a batch
	// for others to join it (busy path, or an idle spout lingering).
	FlushInterval time.Duration
	// Now is the clock of at-least-once timeouts and complete latency
	// (time.Now when nil); tests inject a fake one.
	Now func() time.Time
	// ResourcesDir is what Context.ResourcesDir returns: the directory
	// of the files shipped with the topology.
	ResourcesDir string
	// MaxFrame bounds the frames the transport and the checkpoint
	// manager's socket carry (a task's state is streamed to the latter in
	// chunks of at most one frame); wire.DefaultMaxFrame when 0.
	MaxFrame int
	// CkptMgrSocket is the container's checkpoint manager's Unix socket
	// (effectively-once): the task streams its checkpoints' files there
	// and reads them back at a restore (upload.go, daemons/ckptio).
	CkptMgrSocket string
	// StateDir is the directory of the task's state backend (a backend on
	// disk keeps its files there; its contents are replaced). Empty: a
	// temporary directory, removed when the task ends (DefaultStateDir
	// is the one of an instance in a container).
	StateDir string
}

// Instance runs one task.
type Instance struct {
	cfg       Config
	log       *zap.Logger
	comp      *topology.Component
	container int
	metrics   *Metrics
	em        emitter
	ctx       context.Context
	// ckpt is set in effectively-once mode.
	ckpt *checkpointing
	// state is set for a component that keeps state or registers
	// timers.
	state *taskState
}

// New checks cfg and prepares the instance's routes.
func New(cfg Config) (*Instance, error) {
	if cfg.Topology == nil || cfg.Layout == nil || cfg.Transport == nil {
		return nil, errors.New("instance: Topology, Layout and Transport are required")
	}
	name, ok := cfg.Layout.ComponentOf[cfg.TaskID]
	if !ok {
		return nil, fmt.Errorf("instance: task %d is not in the packing plan", cfg.TaskID)
	}
	comp, ok := cfg.Topology.Logical.Component(name)
	if !ok {
		return nil, fmt.Errorf("instance: component %q of task %d is not in topology %q", name, cfg.TaskID, cfg.Topology.Logical.Name)
	}
	if cfg.Types == nil {
		cfg.Types = cfg.Topology.Types
	}
	if cfg.Streams == nil {
		cfg.Streams = wire.NewStreamTable(cfg.Topology.Logical)
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = &Metrics{}
	}
	if cfg.BatchBytes <= 0 {
		cfg.BatchBytes = DefaultBatchBytes
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	in := &Instance{
		cfg:       cfg,
		log:       cfg.Logger.With(zap.String("component", name), zap.Int("task", cfg.TaskID)),
		comp:      comp,
		container: cfg.Layout.ContainerOf[cfg.TaskID],
		metrics:   cfg.Metrics,
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.TaskID), uint64(time.Now().UnixNano())))
	routes, err := buildRoutes(cfg.Topology, cfg.Streams, cfg.Layout, name, in.container, rng, cfg.Types)
	if err != nil {
		return nil, fmt.Errorf("instance %s/%d: %w", name, cfg.TaskID, err)
	}
	maxTask := 0
	for id := range cfg.Layout.ComponentOf {
		maxTask = max(maxTask, id)
	}
	// The pending batches are written for every batch sent: a slice of
	// its own cache lines (wire.CacheLineSlice).
	out := slices.Grow(wire.CacheLineSlice[*wire.Batch](), maxTask+1)[:maxTask+1]
	in.em = emitter{in: in, routes: routes, out: out, linger: comp.Kind == topology.Spout}
	if cfg.Topology.Logical.DeliveryMode() == topology.AtLeastOnce {
		if cfg.Now == nil {
			cfg.Now = time.Now
			in.cfg.Now = time.Now
		}
		in.em.ack = &ackState{rng: rand.New(rand.NewPCG(uint64(cfg.TaskID)<<32|1, uint64(time.Now().UnixNano()))), owner: wire.CacheLineSlice[*uint64]()}
		if comp.Kind == topology.Spout {
			lt := cfg.Topology.Logical
			in.em.ack.spout = newSpoutAcks(lt.MaxSpoutPending(name), lt.MessageTimeout(name), cfg.Now, in.em.ack.rng.Uint64())
		}
	}
	if cfg.Topology.Logical.DeliveryMode() == topology.EffectivelyOnce {
		if in.ckpt, err = newCheckpointing(in); err != nil {
			return nil, fmt.Errorf("instance %s/%d: %w", name, cfg.TaskID, err)
		}
	}
	return in, nil
}

// processing reports whether the task may emit: always, except in
// effectively-once mode between a restore and StartProcessing.
func (in *Instance) processing() bool { return in.ckpt == nil || in.ckpt.processing }

// Metrics returns the instance's counters.
func (in *Instance) Metrics() *Metrics { return in.metrics }

// Run runs the task until ctx ends. It returns an error when the component
// fails to open or prepare.
func (in *Instance) Run(ctx context.Context) error {
	in.ctx = ctx
	uctx := &userContext{in: in}
	switch in.comp.Kind {
	case topology.Spout:
		s := in.cfg.Topology.Spouts[in.comp.Name]()
		if err := in.call("Open", func() error { return s.Open(uctx, &spoutCollector{em: &in.em}) }); err != nil {
			return in.failed(fmt.Errorf("open spout %s/%d: %w", in.comp.Name, in.cfg.TaskID, err))
		}
		if err := in.bindState(s); err != nil {
			in.call("Close", func() error { s.Close(); return nil })
			return in.failed(fmt.Errorf("spout %s/%d: %w", in.comp.Name, in.cfg.TaskID, err))
		}
		defer in.state.close()
		in.runSpout(ctx, s)
		in.call("Close", func() error { s.Close(); return nil })
	default:
		b := in.cfg.Topology.Bolts[in.comp.Name]()
		if err := in.call("Prepare", func() error { return b.Prepare(uctx, &boltCollector{em: &in.em}) }); err != nil {
			return in.failed(fmt.Errorf("prepare bolt %s/%d: %w", in.comp.Name, in.cfg.TaskID, err))
		}
		if err := in.bindState(b); err != nil {
			in.call("Cleanup", func() error { b.Cleanup(); return nil })
			return in.failed(fmt.Errorf("bolt %s/%d: %w", in.comp.Name, in.cfg.TaskID, err))
		}
		defer in.state.close()
		in.runBolt(ctx, b)
		in.call("Cleanup", func() error { b.Cleanup(); return nil })
	}
	return nil
}

// failed records the error that stops the component (Open or Prepare
// failed) as an exception, with the stack it carries (a subprocess's
// traceback) when it has one, and returns it.
func (in *Instance) failed(err error) error {
	var pe *panicError
	if errors.As(err, &pe) {
		return err // recorded with its stack when it was recovered
	}
	stack := ""
	var se interface{ StackTrace() string }
	if errors.As(err, &se) {
		stack = se.StackTrace()
	}
	in.metrics.Errors.Add(1)
	in.metrics.AddException(err.Error(), stack, time.Now())
	return err
}

// bindState opens the task's state backend when the component keeps
// state, and gives it its states: in effectively-once mode at each
// restore, in the other modes now (empty, for the task's life).
func (in *Instance) bindState(component any) error {
	var err error
	if in.state, err = newTaskState(in, component); err != nil {
		return err
	}
	if in.ckpt != nil {
		in.ckpt.bind(component)
		return nil
	}
	if in.state != nil {
		return in.state.initState()
	}
	return nil
}

// call runs user code, turning a panic into an error that is logged and
// counted; the instance keeps running.
func (in *Instance) call(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = in.panicked(what, r)
		}
	}()
	return fn()
}

// panicked reports a recovered panic of user code.
func (in *Instance) panicked(what string, r any) error {
	in.metrics.Errors.Add(1)
	in.metrics.AddException(fmt.Sprintf("panic in %s: %v", what, r), CallerStack(2), time.Now())
	in.log.Error("user code panicked", zap.String("method", what), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
	return &panicError{fmt.Sprintf("panic in %s: %v", what, r)}
}

// panicError is a recovered panic (already recorded as an exception).
type panicError struct{ msg string }

func (e *panicError) Error() string { return e.msg }

func (in *Instance) runSpout(ctx context.Context, s api.Spout) {
	active := in.cfg.StartActive
	inbox := in.cfg.Transport.Inbox()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	idle := 0
	var sa *spoutAcks
	var expired []any
	if in.em.ack != nil {
		sa = in.em.ack.spout
	}
	ack := func(msgID any) { in.call("Ack", func() error { s.Ack(msgID); return nil }) }
	fail := func(msgID any) { in.call("Fail", func() error { s.Fail(msgID); return nil }) }
	// settleLocal acks trees without copies and times out old roots.
	settleLocal := func() {
		for i, r := range sa.local {
			sa.local[i] = localResult{}
			in.metrics.Acked.Add(1)
			in.metrics.CompleteLatencyCount.Add(1)
			in.metrics.CompleteLatency.Observe(0, 1)
			ack(r.msgID)
		}
		sa.local = sa.local[:0]
		expired = sa.expire(in, in.em.ack, expired[:0])
		for i, id := range expired {
			expired[i] = nil
			fail(id)
		}
	}
	checks := 0
	handle := func(m Msg) {
		if in.ckpt != nil && in.ckpt.handle(m) {
			return
		}
		switch m.Kind {
		case MsgAckResults:
			if sa == nil {
				break
			}
			now := sa.now()
			sa.clock = now // for what Ack and Fail emit
			var c settled
			for _, r := range m.Acks {
				if id, ok := sa.settle(in, r, now, &c); ok {
					if r.Acked {
						ack(id)
					} else {
						fail(id)
					}
				}
			}
			c.publish(in.metrics, sa.n)
		case MsgActivate:
			if !active {
				active = true
				in.call("Activate", func() error { s.Activate(); return nil })
			}
		case MsgDeactivate:
			if active {
				active = false
				in.call("Deactivate", func() error { s.Deactivate(); return nil })
			}
			in.em.flushAll()
		case MsgData:
			in.cfg.Transport.Done(m.Batch)
		case MsgConfig:
			in.reconfigure(s, m.Config, sa, nil)
		case MsgLayout:
			in.relayout(m.Relayout)
		}
		if m.Handled != nil {
			m.Handled()
		}
	}
	for {
	drain:
		for {
			select {
			case m := <-inbox:
				handle(m)
			default:
				break drain
			}
		}
		if ctx.Err() != nil {
			in.em.flushAll()
			return
		}
		if sa != nil {
			if checks++; checks%flushCheckEvery == 0 || len(sa.local) > 0 || !active || sa.full() {
				settleLocal()
			}
			if active && sa.full() {
				// max.spout.pending reached: send what is buffered (its
				// acks free the slots) and wait for results.
				in.em.flushAll()
				waitInbox(ctx, inbox, timer, maxIdleWait, handle)
				continue
			}
		}
		if !active || !in.processing() {
			in.em.flushAll()
			if sa != nil && sa.n > 0 {
				// Keep timing out pending roots while deactivated.
				waitInbox(ctx, inbox, timer, maxIdleWait, handle)
				continue
			}
			select {
			case m := <-inbox:
				handle(m)
			case <-ctx.Done():
			}
			continue
		}
		if in.state != nil {
			if next, ok := in.state.states.NextProcessingTime(); ok && next <= in.state.states.ProcessingTime() {
				in.state.fireTimers()
			}
		}
		emitted, more := in.produce(s, sa)
		if emitted {
			idle = 0
		}
		if more {
			continue
		}
		// Nothing to emit. A partly filled batch first waits up to the
		// flush interval for more tuples: at moderate rates one write
		// and one wake-up per hop carry many tuples instead of one.
		if d := in.em.lingerLeft(in.cfg.FlushInterval); d > 0 {
			waitInbox(ctx, inbox, timer, d, handle)
			continue
		}
		// Send what is buffered, then back off so an idle spout does not
		// spin a core.
		in.em.flushAll()
		if sa != nil {
			settleLocal()
		}
		idle++
		if idle <= 3 {
			runtime.Gosched()
			continue
		}
		wait := min(time.Duration(1<<min(idle-3, 20))*time.Microsecond*16, maxIdleWait)
		waitInbox(ctx, inbox, timer, wait, handle)
	}
}

// produce calls NextTuple up to spoutBurst times, as long as each call
// emits and max.spout.pending leaves room. It reports whether any call
// emitted (the spout is not idle) and whether the last one did (it may
// have more at once); a burst whose last call emitted nothing goes on to
// the linger and back-off of an idle spout, as a single such call does.
// A burst pays for one recover frame and one clock read for the roots it
// starts, and runSpout looks at the inbox and the context once per burst,
// instead of once per call (the roots' start times differ by at most the
// burst's duration). A panic in NextTuple is reported and ends the burst.
func (in *Instance) produce(s api.Spout, sa *spoutAcks) (emitted, more bool) {
	e := &in.em
	start, before := e.emitted, e.emitted
	defer func() {
		if r := recover(); r != nil {
			_ = in.panicked("NextTuple", r)
			emitted, more = e.emitted != start, e.emitted != before
		}
	}()
	if sa != nil {
		sa.refresh()
	}
	for range spoutBurst {
		before = e.emitted
		e.nextTuples++
		s.NextTuple()
		if e.emitted == before {
			return e.emitted != start, false
		}
		e.flushIfDue(in.cfg.FlushInterval)
		if sa != nil && sa.full() {
			break
		}
	}
	return true, true
}

// waitInbox handles one inbox message, or returns after wait or when ctx
// ends.
func waitInbox(ctx context.Context, inbox <-chan Msg, timer *time.Timer, wait time.Duration, handle func(Msg)) {
	timer.Reset(wait)
	select {
	case m := <-inbox:
		handle(m)
	case <-timer.C:
	case <-ctx.Done():
	}
	if !timer.Stop() {
		select {
		case <-timer.C:
		default:
		}
	}
}

func (in *Instance) runBolt(ctx context.Context, b api.Bolt) {
	inbox := in.cfg.Transport.Inbox()
	var tick <-chan time.Time
	var ticker *time.Ticker
	setTick := func(freq time.Duration) {
		if ticker != nil {
			ticker.Stop()
			ticker, tick = nil, nil
		}
		if freq > 0 {
			ticker = time.NewTicker(freq)
			tick = ticker.C
		}
	}
	setTick(in.cfg.Topology.Logical.TickFrequency(in.comp.Name))
	defer func() { setTick(0) }()
	exec := in.boltExecutor(b)
	// A bolt with work of its own (a shell bolt) is pumped when it asks.
	var wake <-chan struct{}
	pump := func() error { return nil }
	if p, ok := b.(api.Pumper); ok {
		wake = p.Wake()
		pump = func() error { p.Pump(); return nil }
	}
	holder, _ := b.(api.Holder)
	for {
		if holder != nil {
			in.metrics.Held.Store(int64(holder.Held()))
		}
		select {
		case <-wake:
			_ = in.call("Pump", pump)
			in.em.flushAll()
		case m := <-inbox:
			if in.ckpt != nil && in.ckpt.handle(m) {
				break
			}
			switch m.Kind {
			case MsgData:
				in.executeBatch(m.Batch.Buf, exec)
				in.em.flushAll()
				in.cfg.Transport.Done(m.Batch)
			case MsgConfig:
				in.reconfigure(b, m.Config, nil, setTick)
			case MsgLayout:
				in.relayout(m.Relayout)
			case MsgTick:
				if in.processing() {
					exec.execute(api.NewTickTuple())
					in.em.flushAll()
				}
			case MsgSync:
				if s, ok := b.(api.Syncer); ok {
					_ = in.call("Sync", func() error { s.Sync(); return nil })
					in.em.flushAll()
				}
			}
			if m.Handled != nil {
				m.Handled()
			}
		case <-tick:
			if !in.processing() {
				break // nothing may be emitted before StartProcessing
			}
			exec.execute(api.NewTickTuple())
			in.em.flushAll()
		case <-in.state.timerC(in.processing()):
			in.state.fireTimers()
			in.em.flushAll()
		case <-ctx.Done():
			in.em.flushAll()
			return
		}
	}
}

// boltExecutor calls a bolt's Execute and keeps its metrics.
type boltExecutor struct {
	in *Instance
	b  api.Bolt
	n  int // tuples executed, for sampling
	rd wire.RecordReader
	h  wire.Header
	a  *arena
	// unsettledLogged limits the log of tuples a reusing bolt left
	// unsettled to one line.
	unsettledLogged bool
}

func (in *Instance) boltExecutor(b api.Bolt) *boltExecutor {
	x := &boltExecutor{in: in, b: b, a: newArena(in.cfg.Streams, in.cfg.Types)}
	if r, ok := b.(api.TupleReuser); ok && r.ReuseTuples() {
		x.a.reuse = true
	}
	return x
}

// settle fails a tracked tuple that a bolt reusing tuples left neither
// acked nor failed: the tuple is about to be overwritten, so nothing
// could settle it later (its spout replays it).
func (x *boltExecutor) settle(t *inTuple) {
	if t.ack == nil || t.ack.done || x.in.em.ack == nil {
		return
	}
	x.in.em.ack.ackInput(&x.in.em, t, true)
	const msg = "the bolt reuses tuples (api.TupleReuser) but left a tuple neither acked nor failed when Execute returned; the runtime failed it"
	x.in.metrics.Errors.Add(1)
	x.in.metrics.AddException(msg, "", time.Now())
	if !x.unsettledLogged {
		x.unsettledLogged = true
		x.in.log.Error(msg+" (logged once)", zap.String("component", x.in.comp.Name))
	}
}

// execute runs Execute on one tuple outside a batch (a tick tuple).
func (x *boltExecutor) execute(t api.Tuple) {
	if x.in.state != nil {
		x.in.state.states.ClearCurrentKey()
	}
	start := time.Now()
	_ = x.in.call("Execute", func() error { x.b.Execute(t); return nil })
	d := time.Since(start)
	x.in.metrics.ExecuteNanos.Add(int64(d))
	x.in.metrics.ExecuteLatency.Observe(d, 1)
	x.in.metrics.Executed.Add(1)
}

// executeBatch decodes the records of an inbound batch and executes each.
// A panic in Execute is reported and the batch goes on with the next
// record.
func (in *Instance) executeBatch(buf []byte, x *boltExecutor) {
	x.rd.Reset(buf)
	before := x.n
	for !x.run() {
	}
	in.metrics.Executed.Add(int64(x.n - before))
}

// run executes the remaining records of the batch. It returns false when
// Execute panicked (the panic is reported).
//
// Execute latency is sampled: one tuple in executeSample is timed (a
// clock read costs as much as a small Execute), and its time counts for
// executeSample tuples.
func (x *boltExecutor) run() (finished bool) {
	in := x.in
	defer func() {
		if r := recover(); r != nil {
			_ = in.panicked("Execute", r)
			finished = false
		}
	}()
	for x.rd.More() {
		t, err := in.decode(&x.rd, &x.h, x.a)
		if err != nil {
			in.metrics.Errors.Add(1)
			in.log.Error("dropping the rest of a corrupt batch", zap.Error(err))
			return true
		}
		if in.state != nil {
			in.state.setKey(x.h.Stream, t)
		}
		// Counted before Execute, so that a tuple whose Execute panics
		// counts too.
		if x.n++; x.n%executeSample != 0 {
			x.b.Execute(t)
		} else {
			start := time.Now()
			x.b.Execute(t)
			d := time.Since(start)
			in.metrics.ExecuteNanos.Add(executeSample * int64(d))
			in.metrics.ExecuteLatency.Observe(d, executeSample)
		}
		if x.a.reuse {
			x.settle(t)
		}
	}
	return true
}
