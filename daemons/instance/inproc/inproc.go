package inproc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/acking"
	"github.com/egret-stream/egret/daemons/instance"
	"github.com/egret-stream/egret/daemons/wire"
)

// Options configure a Runner.
type Options struct {
	Logger *zap.Logger
	// QueueBytes bounds each task's inbound queue (default 2 MiB); with
	// batches of at most BatchBytes it holds QueueBytes/BatchBytes batches.
	QueueBytes int
	// BatchBytes is the batch size at which a batch is sent (default
	// instance.DefaultBatchBytes).
	BatchBytes int
	// Deactivated starts the spouts deactivated.
	Deactivated bool
	// DrainTimeout bounds the drain at the end of a run (default 30s):
	// the spouts are deactivated, the in-flight tuples processed, every
	// bolt with a tick frequency executes a final tick (upstream bolts
	// first), and in at-least-once mode the pending roots complete.
	DrainTimeout time.Duration
	// NoDrain stops the tasks at once when the run ends: no drain, no
	// final tick.
	NoDrain bool
	// Abort, when closed during the drain, ends the drain at once (a
	// second interrupt of a local run); nil: never.
	Abort <-chan struct{}
	// Now is the clock of at-least-once message timeouts (time.Now when
	// nil); tests inject a fake clock to time out roots without waiting.
	Now func() time.Time
	// LedgerCapacity bounds the roots each spout task's ledger holds
	// (default 1<<20); a root registered beyond it fails at once.
	LedgerCapacity int
	// ResourcesDir is what Context.ResourcesDir returns: the directory
	// of the files shipped with the topology (shell components run
	// there).
	ResourcesDir string
}

// Runner runs a topology in this process.
type Runner struct {
	topo      *api.Topology
	opts      Options
	log       *zap.Logger
	layout    *plan.Layout
	inboxes   []chan instance.Msg
	instances map[int]*instance.Instance
	spouts    []int
	inflight  atomic.Int64
	pool      sync.Pool
	start     time.Time
	// ackers holds the XOR ledger of each spout task (at-least-once mode;
	// nil otherwise), indexed by task id.
	ackers  []*acking.Acker
	timeout time.Duration // the longest message timeout of the spouts
	// ticks are the tasks of the bolts with a tick frequency, by level
	// (upstream first): the order of the drain's final ticks.
	ticks []tickLevel
	// bolts are the tasks of every bolt by level (upstream first): the
	// order of the drain's syncs (api.Syncer).
	bolts []tickLevel
}

// New prepares every task of t.
func New(t *api.Topology, opts Options) (*Runner, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = instance.DefaultBatchBytes
	}
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = 2 << 20
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 30 * time.Second
	}
	if m := t.Logical.DeliveryMode(); m != topology.AtMostOnce && m != topology.AtLeastOnce {
		return nil, fmt.Errorf("topology %q asks for %s delivery, which the in-process runner (--local) does not checkpoint; run it on a cluster (egret submit local ...), or choose %s or %s", t.Logical.Name, m, topology.AtMostOnce, topology.AtLeastOnce)
	}
	if opts.LedgerCapacity <= 0 {
		opts.LedgerCapacity = 1 << 20
	}
	pp := plan.SingleContainer(t.Logical)
	r := &Runner{topo: t, opts: opts, log: opts.Logger, layout: pp.Layout(), instances: map[int]*instance.Instance{}}
	r.pool.New = func() any { return &wire.Batch{Buf: make([]byte, 0, opts.BatchBytes+opts.BatchBytes/4)} }
	streams := wire.NewStreamTable(t.Logical)
	tasks := r.layout.AllTasks()
	r.inboxes = make([]chan instance.Msg, tasks[len(tasks)-1]+1)
	depth := max(opts.QueueBytes/opts.BatchBytes, 2)
	for _, id := range tasks {
		r.inboxes[id] = make(chan instance.Msg, depth)
	}
	for _, id := range tasks {
		in, err := instance.New(instance.Config{
			Topology:     t,
			Layout:       r.layout,
			Streams:      streams,
			TaskID:       id,
			Transport:    &transport{r: r, task: id},
			Logger:       opts.Logger,
			StartActive:  !opts.Deactivated,
			BatchBytes:   opts.BatchBytes,
			Now:          opts.Now,
			ResourcesDir: opts.ResourcesDir,
		})
		if err != nil {
			return nil, err
		}
		r.instances[id] = in
		if c, _ := t.Logical.Component(r.layout.ComponentOf[id]); c.Kind == topology.Spout {
			r.spouts = append(r.spouts, id)
		}
	}
	if t.Logical.DeliveryMode() == topology.AtLeastOnce {
		r.ackers = make([]*acking.Acker, len(r.inboxes))
		for _, id := range r.spouts {
			a, err := acking.NewAcker(acking.DefaultBuckets, opts.LedgerCapacity)
			if err != nil {
				return nil, err
			}
			r.ackers[id] = a
			r.timeout = max(r.timeout, t.Logical.MessageTimeout(r.layout.ComponentOf[id]))
		}
	}
	r.ticks = tickLevels(t.Logical, r.layout, func(c *topology.Component) bool { return t.Logical.TickFrequency(c.Name) > 0 })
	r.bolts = tickLevels(t.Logical, r.layout, func(*topology.Component) bool { return true })
	return r, nil
}

// Layout returns the task layout (component → task ids).
func (r *Runner) Layout() *plan.Layout { return r.layout }

// Run runs every task until ctx ends, then drains (unless
// Options.NoDrain): the spouts are deactivated, the in-flight tuples
// processed, the bolts with a tick frequency execute a final tick
// (upstream bolts first), the pending roots complete; then the components
// are closed. It returns the run's summary, with what the drain did.
func (r *Runner) Run(ctx context.Context) (*Summary, error) {
	r.start = time.Now()
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(r.instances))
	for id, in := range r.instances {
		wg.Add(1)
		go func(id int, in *instance.Instance) {
			defer wg.Done()
			if err := in.Run(runCtx); err != nil {
				errs <- err
				r.discard(runCtx, id)
			}
		}(id, in)
	}
	for id, a := range r.ackers {
		if a != nil {
			wg.Add(1)
			go func() { defer wg.Done(); r.deliver(runCtx, id, a) }()
		}
	}
	if r.ackers != nil {
		wg.Add(1)
		go func() { defer wg.Done(); r.rotate(runCtx) }()
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs:
	}
	elapsed := time.Since(r.start)
	var rep DrainReport
	if r.opts.NoDrain {
		rep = DrainReport{Outcome: DrainSkipped}
		for _, l := range r.ticks {
			rep.Unticked = append(rep.Unticked, l.components...)
		}
	} else {
		rep = r.drain()
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		runErr = errors.Join(runErr, err)
	}
	s := r.summary(elapsed)
	s.Drain = rep
	if rep.Outcome != DrainCompleted {
		s.Undrained = r.inflight.Load()
	}
	s.PendingRoots = r.pendingRoots()
	return s, runErr
}

// discard consumes the inbox of a task that failed to start, so that
// senders and the drain do not wait for it.
func (r *Runner) discard(ctx context.Context, id int) {
	for {
		select {
		case m := <-r.inboxes[id]:
			if m.Batch != nil {
				r.instances[id].Metrics().Dropped.Add(int64(m.Batch.Count))
				(&transport{r: r, task: id}).Done(m.Batch)
			}
			if m.Handled != nil {
				m.Handled()
			}
		case <-ctx.Done():
			return
		}
	}
}

// SetActive activates or deactivates every spout and waits until they
// have acted on it.
func (r *Runner) SetActive(ctx context.Context, active bool) error {
	kind := instance.MsgDeactivate
	if active {
		kind = instance.MsgActivate
	}
	var wg sync.WaitGroup
	for _, id := range r.spouts {
		wg.Add(1)
		select {
		case r.inboxes[id] <- instance.Msg{Kind: kind, Handled: wg.Done}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errAborted ends a drain whose Options.Abort was closed.
var errAborted = errors.New("drain aborted")

// drain deactivates the spouts, waits until no batch is in flight, gives
// every bolt with a tick frequency a final tick, level by level (what a
// level's ticks emitted is processed before the next level ticks), and
// waits until no batch is in flight and no root is pending. It is
// bounded by Options.DrainTimeout and Options.Abort.
func (r *Runner) drain() DrainReport {
	start := time.Now()
	actx, abort := context.WithCancelCause(context.Background())
	defer abort(nil)
	if r.opts.Abort != nil {
		go func() {
			select {
			case <-r.opts.Abort:
				abort(errAborted)
			case <-actx.Done():
			}
		}()
	}
	ctx, cancel := context.WithTimeout(actx, r.opts.DrainTimeout)
	defer cancel()
	rep := DrainReport{Outcome: DrainCompleted}
	end := func(waiting string, level int) DrainReport {
		rep.Elapsed = time.Since(start)
		if waiting == "" {
			return rep
		}
		rep.Outcome = DrainTimedOut
		if errors.Is(context.Cause(actx), errAborted) {
			rep.Outcome = DrainAborted
		}
		rep.Waiting = waiting
		for _, l := range r.ticks[level:] {
			rep.Unticked = append(rep.Unticked, l.components...)
		}
		r.log.Info("the drain did not complete", zap.String("outcome", rep.Outcome.String()), zap.String("waiting_for", waiting),
			zap.Int64("batches", r.inflight.Load()), zap.Int64("pending_roots", r.pendingRoots()), zap.Strings("unticked", rep.Unticked))
		return rep
	}
	if err := r.SetActive(ctx, false); err != nil {
		return end("the spouts to deactivate", 0)
	}
	if w := r.settle(ctx); w != "" {
		return end(w, 0)
	}
	for i, l := range r.ticks {
		if err := r.send(ctx, l.tasks, instance.MsgTick); err != nil {
			return end("the final ticks of "+strings.Join(l.components, ", "), i)
		}
		rep.FinalTicks += len(l.tasks)
		rep.Ticked = append(rep.Ticked, l.components...)
		if w := r.settle(ctx); w != "" {
			return end("what the final ticks of "+strings.Join(l.components, ", ")+" emitted: "+w, i+1)
		}
	}
	if !r.waitUntil(ctx, func() bool { return r.idle() && r.pendingRoots() == 0 }) {
		return end("the pending roots", len(r.ticks))
	}
	return end("", len(r.ticks))
}

// settle waits until nothing is in flight, also inside the bolts that
// hold tuples outside Execute (a shell bolt's subprocess): level by level,
// upstream first, every bolt task is synced (api.Syncer) and what that
// emitted processed, so that a level receives nothing more once synced.
// It returns what it was waiting for when ctx ended ("" once settled).
func (r *Runner) settle(ctx context.Context) string {
	if !r.waitUntil(ctx, r.idle) {
		return "the in-flight tuples"
	}
	for _, l := range r.bolts {
		if err := r.send(ctx, l.tasks, instance.MsgSync); err != nil {
			return "the tuples held by " + strings.Join(l.components, ", ")
		}
		if !r.waitUntil(ctx, r.idle) {
			return "what " + strings.Join(l.components, ", ") + " emitted"
		}
	}
	return ""
}

// idle reports whether no batch is in flight: every inbound queue is
// empty and no task is executing one (a batch counts until its task has
// processed it and sent what it emitted).
func (r *Runner) idle() bool { return r.inflight.Load() == 0 }

// waitUntil polls cond every millisecond until it holds (true) or ctx
// ends (false).
func (r *Runner) waitUntil(ctx context.Context, cond func() bool) bool {
	if cond() {
		return true
	}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if cond() {
				return true
			}
		case <-ctx.Done():
			return false
		}
	}
}

// send gives each of tasks a message of kind (a final tick, a sync) and
// waits until they have handled it (and sent what they emitted).
func (r *Runner) send(ctx context.Context, tasks []int, kind instance.MsgKind) error {
	var wg sync.WaitGroup
	for _, id := range tasks {
		wg.Add(1)
		select {
		case r.inboxes[id] <- instance.Msg{Kind: kind, Handled: wg.Done}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tickLevel is one level of the final ticks: the bolts with a tick
// frequency at the same depth of the topology.
type tickLevel struct {
	components []string
	tasks      []int
}

// tickLevels orders the bolts that keep (those with a tick frequency, or
// all) by depth, the length of the longest path from a spout to them, so
// that every bolt upstream of a bolt is in an earlier level. Validation
// refuses cycles; a bolt on one would be put at the depth where the cycle
// was entered.
func tickLevels(t *topology.Topology, layout *plan.Layout, keep func(*topology.Component) bool) []tickLevel {
	depth := map[string]int{}
	var visit func(name string) int
	visit = func(name string) int {
		if d, ok := depth[name]; ok {
			return d
		}
		depth[name] = 0 // a cycle ends here
		c, ok := t.Component(name)
		if !ok {
			return 0
		}
		d := 0
		for _, in := range c.Inputs {
			d = max(d, visit(in.Component)+1)
		}
		depth[name] = d
		return d
	}
	byDepth := map[int]*tickLevel{}
	var depths []int
	for _, c := range t.Components {
		if c.Kind != topology.Bolt || !keep(&c) {
			continue
		}
		d := visit(c.Name)
		l := byDepth[d]
		if l == nil {
			l = &tickLevel{}
			byDepth[d] = l
			depths = append(depths, d)
		}
		l.components = append(l.components, c.Name)
		l.tasks = append(l.tasks, layout.Tasks[c.Name]...)
	}
	sort.Ints(depths)
	levels := make([]tickLevel, 0, len(depths))
	for _, d := range depths {
		l := byDepth[d]
		sort.Strings(l.components)
		sort.Ints(l.tasks)
		levels = append(levels, *l)
	}
	return levels
}

// pendingRoots sums the spouts' pending roots (0 in at-most-once mode).
func (r *Runner) pendingRoots() int64 {
	if r.ackers == nil {
		return 0
	}
	var n int64
	for _, id := range r.spouts {
		n += r.instances[id].Metrics().PendingRoots.Load()
	}
	return n
}

// Metrics returns the counters of every task.
func (r *Runner) Metrics() map[int]*instance.Metrics {
	out := make(map[int]*instance.Metrics, len(r.instances))
	for id, in := range r.instances {
		out[id] = in.Metrics()
	}
	return out
}

// Summary is what a run did, per component.
type Summary struct {
	Topology   string
	Elapsed    time.Duration
	Components []ComponentSummary
	// Drain is what the drain at the end of the run did.
	Drain DrainReport
	// Undrained counts batches still in flight when the tasks stopped
	// after a drain that did not complete (or no drain).
	Undrained int64
	// PendingRoots counts the spouts' roots neither acked nor failed when
	// the run stopped (at-least-once mode).
	PendingRoots int64
}

// DrainOutcome is how the drain at the end of a run ended.
type DrainOutcome int

// Drain outcomes.
const (
	// DrainSkipped: Options.NoDrain, the tasks stopped at once.
	DrainSkipped DrainOutcome = iota
	// DrainCompleted: nothing in flight, no pending root, every final
	// tick executed.
	DrainCompleted
	// DrainTimedOut: Options.DrainTimeout passed first.
	DrainTimedOut
	// DrainAborted: Options.Abort was closed first.
	DrainAborted
)

func (o DrainOutcome) String() string {
	switch o {
	case DrainSkipped:
		return "skipped"
	case DrainCompleted:
		return "completed"
	case DrainTimedOut:
		return "timed out"
	case DrainAborted:
		return "aborted"
	}
	return fmt.Sprintf("DrainOutcome(%d)", int(o))
}

// DrainReport is what the drain at the end of a run did.
type DrainReport struct {
	Outcome DrainOutcome
	Elapsed time.Duration
	// Waiting says what a drain that did not complete was waiting for.
	Waiting string
	// FinalTicks counts the bolt tasks that executed their final tick;
	// Ticked names their components, upstream first.
	FinalTicks int
	Ticked     []string
	// Unticked names the bolts with a tick frequency whose final tick was
	// not executed when the drain ended.
	Unticked []string
}

// ComponentSummary sums the metrics of a component's tasks.
type ComponentSummary struct {
	Name         string
	Kind         topology.Kind
	Tasks        int
	Emitted      int64
	Sent         int64
	Executed     int64
	ExecuteNanos int64
	Errors       int64
	Dropped      int64
	// At-least-once counts of spouts (see instance.Metrics).
	Acked                int64
	Failed               int64
	TimedOut             int64
	CompleteLatencyNanos int64
	CompleteLatencyCount int64
	Counters             map[string]int64
}

// Component returns the summary of the named component.
func (s *Summary) Component(name string) *ComponentSummary {
	for i := range s.Components {
		if s.Components[i].Name == name {
			return &s.Components[i]
		}
	}
	return nil
}

func (r *Runner) summary(elapsed time.Duration) *Summary {
	s := &Summary{Topology: r.topo.Logical.Name, Elapsed: elapsed}
	for _, c := range r.topo.Logical.Components {
		cs := ComponentSummary{Name: c.Name, Kind: c.Kind, Counters: map[string]int64{}}
		for _, id := range r.layout.Tasks[c.Name] {
			m := r.instances[id].Metrics()
			cs.Tasks++
			cs.Emitted += m.Emitted.Load()
			cs.Sent += m.Sent.Load()
			cs.Executed += m.Executed.Load()
			cs.ExecuteNanos += m.ExecuteNanos.Load()
			cs.Errors += m.Errors.Load()
			cs.Dropped += m.Dropped.Load()
			cs.Acked += m.Acked.Load()
			cs.Failed += m.Failed.Load()
			cs.TimedOut += m.TimedOut.Load()
			cs.CompleteLatencyNanos += m.CompleteLatencyNanos.Load()
			cs.CompleteLatencyCount += m.CompleteLatencyCount.Load()
			for k, v := range m.UserCounters() {
				cs.Counters[k] += v
			}
		}
		s.Components = append(s.Components, cs)
	}
	sort.SliceStable(s.Components, func(i, j int) bool { return s.Components[i].Kind < s.Components[j].Kind })
	return s
}

// transport is one task's view of the in-memory router.
type transport struct {
	r    *Runner
	task int
}

func (t *transport) Send(ctx context.Context, b *wire.Batch) error {
	if int(b.Dest) >= len(t.r.inboxes) || t.r.inboxes[b.Dest] == nil {
		return fmt.Errorf("no task %d in this topology", b.Dest)
	}
	t.r.inflight.Add(1)
	select {
	case t.r.inboxes[b.Dest] <- instance.Msg{Kind: instance.MsgData, Batch: b}:
		return nil
	case <-ctx.Done():
		t.r.inflight.Add(-1)
		return ctx.Err()
	}
}

func (t *transport) Idle(dest uint32) bool { return len(t.r.inboxes[dest]) == 0 }

func (t *transport) NewBatch(dest uint32) *wire.Batch {
	b := t.r.pool.Get().(*wire.Batch)
	b.Reset(dest)
	return b
}

func (t *transport) Done(b *wire.Batch) {
	t.r.pool.Put(b)
	t.r.inflight.Add(-1)
}

func (t *transport) Inbox() <-chan instance.Msg { return t.r.inboxes[t.task] }
