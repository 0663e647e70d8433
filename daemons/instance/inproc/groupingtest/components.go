package groupingtest

import (
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
)

// Topology settings the components read.
const (
	// KeyCase names the case whose tuples the spout emits.
	KeyCase = "groupingtest.case"
	// KeyRecordDir is the directory Files records to.
	KeyRecordDir = "groupingtest.record.dir"
)

// Spout is the name of the spout of every case; it has one task.
const Spout = "src"

// CustomGroupingName names the custom grouping function of the "custom"
// case.
const CustomGroupingName = "pick"

// components builds the spout and bolts of one topology and holds what
// they share within a process.
type components struct {
	rec Recorder

	mu sync.Mutex
	// spoutSink is the sink of the spout task of this process, where the
	// custom grouping function (called while the spout emits) records.
	spoutSink *taskSink
}

// taskSink is a task's Sink that logs and reports its first error.
type taskSink struct {
	sink   Sink
	ctx    api.Context
	report func(error)
	failed bool
}

func openSink(rec Recorder, ctx api.Context, report func(error)) (*taskSink, error) {
	s, err := rec.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("groupingtest: task %d of %q: %w", ctx.TaskID(), ctx.ComponentName(), err)
	}
	return &taskSink{sink: s, ctx: ctx, report: report}, nil
}

func (s *taskSink) record(r Record) {
	if err := s.sink.Record(r); err != nil && !s.failed {
		s.failed = true
		s.ctx.Logger().Error("groupingtest: cannot record; the case will miss records", zap.Error(err))
		s.report(err)
	}
}

func (s *taskSink) close() {
	if err := s.sink.Close(); err != nil {
		s.ctx.Logger().Warn("groupingtest: close the record sink", zap.Error(err))
	}
}

// emitFunc emits the i-th tuple of a case's spout.
type emitFunc func(ctx api.Context, out api.SpoutCollector, i int)

// Key is the grouping key of tuple i: 1000 distinct keys.
func Key(i int) string { return fmt.Sprintf("k%03d", i%1000) }

// emitDefault emits (Key(i), i) on the default stream.
func emitDefault(_ api.Context, out api.SpoutCollector, i int) {
	out.Emit(api.Values{Key(i), i}, nil)
}

// spout returns the factory of the spout shared by every case.
func (c *components) spout() api.SpoutFactory {
	return func() api.Spout { return &boundedSpout{c: c} }
}

// boundedSpout emits the N tuples of the case named by KeyCase, one per
// NextTuple, records KindSpoutDone and then stays idle. It declares the
// default stream and the streams "odd" and "even" with fields (key, n), and
// the direct stream "d" with fields (key, n, to).
type boundedSpout struct {
	api.BaseSpout
	c    *components
	emit emitFunc
	n, i int
	ctx  api.Context
	out  api.SpoutCollector
	sink *taskSink
}

func (s *boundedSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	tc, err := Lookup(ctx.Config(KeyCase))
	if err != nil {
		return fmt.Errorf("groupingtest spout (topology setting %s): %w", KeyCase, err)
	}
	sink, err := openSink(s.c.rec, ctx, out.ReportError)
	if err != nil {
		return err
	}
	s.ctx, s.out, s.sink, s.n, s.emit = ctx, out, sink, tc.N, tc.emit
	if s.emit == nil {
		s.emit = emitDefault
	}
	s.c.mu.Lock()
	s.c.spoutSink = sink
	s.c.mu.Unlock()
	sink.record(Record{Kind: KindPrepared, Component: ctx.ComponentName(), Task: ctx.TaskID(), Tasks: ctx.ComponentTasks(ctx.ComponentName())})
	return nil
}

func (s *boundedSpout) NextTuple() {
	if s.i >= s.n {
		return
	}
	s.emit(s.ctx, s.out, s.i)
	s.i++
	if s.i == s.n {
		s.sink.record(Record{Kind: KindSpoutDone, Component: s.ctx.ComponentName(), Task: s.ctx.TaskID(), N: s.n})
	}
}

func (s *boundedSpout) Close() {
	if s.sink != nil {
		s.sink.close()
	}
}

func (s *boundedSpout) DeclareOutputFields(d api.OutputDeclarer) {
	d.Declare("key", "n")
	d.DeclareStream("odd", "key", "n")
	d.DeclareStream("even", "key", "n")
	d.DeclareDirectStream("d", "key", "n", "to")
}

// custom is the custom grouping function of the "custom" case: by n mod 5
// it sends a tuple nowhere, to the first and the last task, to a task that
// does not exist (the runtime drops and counts it), or to one task. It
// records every call it gets.
func (c *components) custom(values []any, tasks []int) []int {
	c.mu.Lock()
	sink := c.spoutSink
	c.mu.Unlock()
	if sink != nil {
		sink.record(Record{Kind: KindCustomCall, Component: sink.ctx.ComponentName(), Task: sink.ctx.TaskID(), Tasks: append([]int(nil), tasks...)})
	}
	if len(values) < 2 || len(tasks) == 0 {
		return nil
	}
	n, _ := asInt(values[1])
	switch n % 5 {
	case 0:
		return nil
	case 1:
		return []int{tasks[0], tasks[len(tasks)-1]}
	case 2:
		return []int{1 << 20}
	default:
		return []int{tasks[n%len(tasks)]}
	}
}

// boltOptions change what a recording bolt does besides recording.
type boltOptions struct {
	// forward re-emits every data tuple on the bolt's default stream
	// (fields key, n), anchored to it.
	forward bool
	// panicOdd panics after recording (and forwarding) a tuple whose n is
	// odd.
	panicOdd bool
}

// bolt returns the factory of a bolt named name that records every tuple.
func (c *components) bolt(name string, o boltOptions) api.BoltFactory {
	return func() api.Bolt { return &recordingBolt{c: c, name: name, o: o} }
}

type recordingBolt struct {
	api.BaseBolt
	c    *components
	name string
	o    boltOptions
	task int
	out  api.BoltCollector
	sink *taskSink
}

func (b *recordingBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	sink, err := openSink(b.c.rec, ctx, out.ReportError)
	if err != nil {
		return err
	}
	b.task, b.out, b.sink = ctx.TaskID(), out, sink
	sink.record(Record{Kind: KindPrepared, Component: b.name, Task: b.task, Tasks: ctx.ComponentTasks(b.name)})
	return nil
}

func (b *recordingBolt) Execute(t api.Tuple) {
	r := tupleRecord(b.name, b.task, t)
	b.sink.record(r)
	if r.Kind == KindTick {
		return
	}
	if b.o.forward {
		b.out.Emit(api.Values{t.Value(0), t.Value(1)}, t)
	}
	b.out.Ack(t)
	if b.o.panicOdd && r.N%2 == 1 {
		panic(fmt.Sprintf("odd tuple %d", r.N))
	}
}

func (b *recordingBolt) Cleanup() {
	if b.sink != nil {
		b.sink.close()
	}
}

func (b *recordingBolt) DeclareOutputFields(d api.OutputDeclarer) {
	if b.o.forward {
		d.Declare("key", "n")
	}
}

// Builder returns the topology of the case, named TopologyName(), whose
// components record to rec.
func (c *Case) Builder(rec Recorder) *api.TopologyBuilder {
	b := api.NewTopologyBuilder(c.TopologyName())
	b.SetConfig(KeyCase, c.Name)
	comps := &components{rec: rec}
	b.SetSpout(Spout, comps.spout(), 1)
	c.bolts(b, comps)
	return b
}

// AllBuilder returns one topology holding the components of every case
// (the spout is shared; bolt names are unique across cases). A topology
// binary builds it when it runs an instance, so that it has the factory of
// every component of whichever case was submitted.
func AllBuilder(rec Recorder) *api.TopologyBuilder {
	b := api.NewTopologyBuilder("groupingtest-all")
	comps := &components{rec: rec}
	b.SetSpout(Spout, comps.spout(), 1)
	for _, c := range cases {
		c.bolts(b, comps)
	}
	return b
}

// TopologyName is the name of the case's topology.
func (c *Case) TopologyName() string { return "grouping-" + c.Name }
