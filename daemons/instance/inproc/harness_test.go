package inproc

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
)

// This file is a small harness for running topologies whose spout emits a
// known number of tuples and whose bolts record what they receive. The
// grouping cases (groupings_test.go) use it through a topologyRunner, so
// that the same cases can run against another runtime (the multi-process
// cluster) by swapping the runner.

// caseDeadline bounds how long a case may take to emit its tuples.
const caseDeadline = 20 * time.Second

// received is one tuple a recording bolt executed.
type received struct {
	bolt   string
	task   int
	source string
	stream string
	values []any
	tick   bool
}

// recorder collects what the spout emitted and the bolts received. It is
// shared with the components through their factories' closures.
type recorder struct {
	mu      sync.Mutex
	emitted int              // spout emission steps (NextTuple calls that emitted)
	got     []received       // every Execute call
	tasks   map[string][]int // bolt → ctx.ComponentTasks(bolt), seen in Prepare
	custom  [][]int          // task lists a custom grouping function received
	until   func(r *recorder) bool
	done    chan struct{}
	closed  bool
}

// update runs f under the lock and closes done once until holds.
func (r *recorder) update(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
	if !r.closed && r.until(r) {
		r.closed = true
		close(r.done)
	}
}

// harness builds the spout and bolts of one case.
type harness struct {
	n   int // tuples the spout emits
	rec *recorder
}

func newHarness(n int, until func(r *recorder) bool) *harness {
	h := &harness{n: n}
	h.rec = &recorder{tasks: map[string][]int{}, done: make(chan struct{})}
	h.rec.until = func(r *recorder) bool {
		return r.emitted >= n && (until == nil || until(r))
	}
	return h
}

// emitFunc emits the i-th tuple of the spout.
type emitFunc func(ctx api.Context, out api.SpoutCollector, i int)

// key is the grouping key of tuple i: 1000 distinct keys.
func key(i int) string { return fmt.Sprintf("k%03d", i%1000) }

// emitDefault emits (key(i), i) on the default stream.
func emitDefault(_ api.Context, out api.SpoutCollector, i int) {
	out.Emit(api.Values{key(i), i}, nil)
}

// spout returns the factory of a spout that calls emit for i = 0..n-1, one
// per NextTuple, then stays idle. It declares the default stream and the
// streams "odd" and "even" with fields (key, n), and the direct stream "d"
// with fields (key, n, to).
func (h *harness) spout(emit emitFunc) api.SpoutFactory {
	if emit == nil {
		emit = emitDefault
	}
	return func() api.Spout { return &boundedSpout{h: h, emit: emit} }
}

type boundedSpout struct {
	api.BaseSpout
	h    *harness
	emit emitFunc
	ctx  api.Context
	out  api.SpoutCollector
	i    int
}

func (s *boundedSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	s.ctx, s.out = ctx, out
	return nil
}

func (s *boundedSpout) NextTuple() {
	if s.i >= s.h.n {
		return
	}
	s.emit(s.ctx, s.out, s.i)
	s.i++
	s.h.rec.update(func() { s.h.rec.emitted++ })
}

func (s *boundedSpout) DeclareOutputFields(d api.OutputDeclarer) {
	d.Declare("key", "n")
	d.DeclareStream("odd", "key", "n")
	d.DeclareStream("even", "key", "n")
	d.DeclareDirectStream("d", "key", "n", "to")
}

// boltOptions change what a recording bolt does besides recording.
type boltOptions struct {
	// forward re-emits every non-tick tuple on the bolt's default stream
	// (fields key, n).
	forward bool
	// panicOdd panics after recording a tuple whose n is odd.
	panicOdd bool
}

// bolt returns the factory of a bolt named name that records every tuple.
func (h *harness) bolt(name string, o boltOptions) api.BoltFactory {
	return func() api.Bolt { return &recordingBolt{h: h, name: name, o: o} }
}

type recordingBolt struct {
	api.BaseBolt
	h    *harness
	name string
	o    boltOptions
	task int
	out  api.BoltCollector
}

func (b *recordingBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.task, b.out = ctx.TaskID(), out
	tasks := ctx.ComponentTasks(b.name)
	b.h.rec.update(func() { b.h.rec.tasks[b.name] = tasks })
	return nil
}

func (b *recordingBolt) Execute(t api.Tuple) {
	r := received{bolt: b.name, task: b.task, source: t.SourceComponent(), stream: t.SourceStream(),
		values: slices.Clone(t.Values()), tick: t.IsTick()}
	b.h.rec.update(func() { b.h.rec.got = append(b.h.rec.got, r) })
	if r.tick {
		return
	}
	if b.o.forward {
		b.out.Emit(api.Values{t.Value(0), t.Value(1)}, t)
	}
	b.out.Ack(t)
	if b.o.panicOdd && t.Int64(1)%2 == 1 {
		panic(fmt.Sprintf("odd tuple %d", t.Int64(1)))
	}
}

func (b *recordingBolt) DeclareOutputFields(d api.OutputDeclarer) {
	if b.o.forward {
		d.Declare("key", "n")
	}
}

// tuples returns the non-tick tuples bolt received.
func (h *harness) tuples(bolt string) []received {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	var out []received
	for _, r := range h.rec.got {
		if r.bolt == bolt && !r.tick {
			out = append(out, r)
		}
	}
	return out
}

// ticks returns the tick tuples bolt received.
func (h *harness) ticks(bolt string) []received {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	var out []received
	for _, r := range h.rec.got {
		if r.bolt == bolt && r.tick {
			out = append(out, r)
		}
	}
	return out
}

// tasksOf returns the task ids of bolt as its tasks saw them in Prepare.
func (h *harness) tasksOf(t *testing.T, bolt string) []int {
	t.Helper()
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	tasks := h.rec.tasks[bolt]
	if len(tasks) == 0 {
		t.Fatalf("bolt %q was never prepared", bolt)
	}
	return tasks
}

// perTask counts tuples per task.
func perTask(rs []received) map[int]int {
	out := map[int]int{}
	for _, r := range rs {
		out[r.task]++
	}
	return out
}

// componentStats are the runtime's counters of one component, summed over
// its tasks.
type componentStats struct {
	Emitted, Executed, Errors, Dropped int64
}

// runResult maps component names to their counters.
type runResult map[string]componentStats

// topologyRunner runs topo until ctx ends, then drains in-flight tuples
// (so every emitted tuple has been executed), stops it and returns its
// counters. It fails t when the topology cannot run.
type topologyRunner func(ctx context.Context, t *testing.T, topo *api.Topology) runResult

// inprocRunner runs the topology with this package's Runner.
func inprocRunner(ctx context.Context, t *testing.T, topo *api.Topology) runResult {
	t.Helper()
	r, err := New(topo, Options{DrainTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("inproc.New: %v", err)
	}
	s, err := r.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if s.Undrained != 0 {
		t.Fatalf("%d batches were not drained", s.Undrained)
	}
	res := runResult{}
	for _, c := range s.Components {
		res[c.Name] = componentStats{Emitted: c.Emitted, Executed: c.Executed, Errors: c.Errors, Dropped: c.Dropped}
	}
	return res
}

// runCase builds the case's topology, runs it with runner until the spout
// has emitted everything (and the case's own condition holds), and returns
// the harness and the counters.
func runCase(t *testing.T, runner topologyRunner, n int, until func(*recorder) bool, build func(h *harness, b *api.TopologyBuilder)) (*harness, runResult) {
	t.Helper()
	h := newHarness(n, until)
	b := api.NewTopologyBuilder("harness")
	build(h, b)
	topo, err := b.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timedOut := make(chan bool, 1)
	go func() {
		deadline := time.NewTimer(caseDeadline)
		defer deadline.Stop()
		select {
		case <-h.rec.done:
			timedOut <- false
		case <-deadline.C:
			timedOut <- true
		case <-ctx.Done(): // the runner gave up early
			timedOut <- false
		}
		cancel()
	}()
	res := runner(ctx, t, topo)
	cancel()
	if <-timedOut {
		h.rec.mu.Lock()
		emitted := h.rec.emitted
		h.rec.mu.Unlock()
		t.Fatalf("the case did not complete within %v (spout emitted %d of %d)", caseDeadline, emitted, n)
	}
	return h, res
}
