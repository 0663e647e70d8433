package queries

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/table"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/examples/nexmark/source"
)

// KeySink selects what final tasks do with results: "print" or "count"
// (the default).
const KeySink = "nexmark.sink"

// Query is one Nexmark query.
type Query struct {
	// Name is "q0" ... "q22".
	Name string
	// Title says what it computes.
	Title string
	// Stateful queries keep state across events (aggregations, joins,
	// windows).
	Stateful bool
	// Upserts: the query's rows update a keyed result (a row replaces
	// the earlier row of its key) instead of being appended.
	Upserts bool
	build   func(p *Plan)
}

// Plan is a query's topology under construction.
type Plan struct {
	q           *Query
	wb          *window.Builder
	parallelism int
}

// Name is the component name of part of the query.
func (p *Plan) Name(part string) string { return p.q.Name + "-" + part }

// Topology returns the topology builder.
func (p *Plan) Topology() *api.TopologyBuilder { return p.wb.Topology() }

// All is every query, by name.
var All = map[string]*Query{}

func register(q *Query) { All[q.Name] = q }

// Names returns the query names in order (q0, q1, ..., q22).
func Names() []string {
	var out []string
	for n := range All {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := strconv.Atoi(out[i][1:])
		b, _ := strconv.Atoi(out[j][1:])
		return a < b
	})
	return out
}

// Add adds query q's components to tb, its bolts with parallelism tasks
// (where the query allows more than one) and the source with parallelism
// tasks too.
func Add(tb *api.TopologyBuilder, q *Query, parallelism int) {
	p := &Plan{q: q, wb: window.NewBuilder(tb), parallelism: max(parallelism, 1)}
	q.build(p)
}

// Events adds the source spout and returns its name. With watermarks the
// spout emits in-band watermarks of event time (bounded by maxDelay).
func (p *Plan) Events(watermarks bool, maxDelay time.Duration) string {
	name := p.Name("events")
	if watermarks {
		p.wb.SetSpout(name, source.NewSpout, p.parallelism, window.SpoutWatermarks{
			Timestamp: source.Timestamp,
			Generator: func() window.Generator { return window.BoundedOutOfOrderness(maxDelay) },
		})
	} else {
		p.Topology().SetSpout(name, source.NewSpout, p.parallelism)
	}
	return name
}

// End is the end of the source's bounded input, for table operators.
func (p *Plan) End(onEnd func(out api.BoltCollector)) table.End {
	return table.End{Component: p.Name("events"), Stream: source.EndStream, OnEnd: onEnd}
}

// Results is what a final task does with the rows of a query.
type Results struct {
	query string
	task  int
	print bool
	n     *api.Counter
	buf   []byte
}

// NewResults makes the Results of a final task.
func NewResults(ctx api.Context, query string) *Results {
	return &Results{query: query, task: ctx.TaskIndex(), print: ctx.Config(KeySink) == "print", n: ctx.Counter("nexmark.results")}
}

// Row hands over one result row.
func (r *Results) Row(vals ...any) {
	r.n.Inc()
	if !r.print {
		return
	}
	r.buf = append(r.buf[:0], r.query...)
	for _, v := range vals {
		r.buf = append(r.buf, '\t')
		r.buf = AppendValue(r.buf, v)
	}
	r.buf = append(r.buf, '\n')
	_, _ = os.Stdout.Write(r.buf)
}

// Count counts a row written elsewhere (q10's files).
func (r *Results) Count() { r.n.Inc() }

// End reports the end of a bounded input.
func (r *Results) End() {
	if r.print {
		fmt.Fprintf(os.Stdout, "%s\tEND\t%d\n", r.query, r.task)
	}
}

// AppendValue formats one value of a row.
func AppendValue(dst []byte, v any) []byte {
	switch v := v.(type) {
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case int:
		return strconv.AppendInt(dst, int64(v), 10)
	case float64:
		return strconv.AppendFloat(dst, v, 'f', -1, 64)
	case string:
		return append(dst, v...)
	case nil:
		return append(dst, "NULL"...)
	case bool:
		return strconv.AppendBool(dst, v)
	}
	return fmt.Append(dst, v)
}

// FormatRow formats a row as Results prints it, for references.
func FormatRow(query string, vals ...any) string {
	b := []byte(query)
	for _, v := range vals {
		b = append(b, '\t')
		b = AppendValue(b, v)
	}
	return string(b)
}

// final wraps the bolt of a query's last operator: what it emits on the
// default stream becomes result rows, and the end of the input (an
// operator's End.OnEnd, or a window bolt's watermark reaching
// EndOfInput) is reported, so no extra component (and no extra hop)
// is needed for the sink.
func final(query string, f func() api.Bolt) api.BoltFactory {
	return func() api.Bolt { return &terminal{Bolt: f(), query: query} }
}

type terminal struct {
	api.Bolt
	query string
	res   *Results
	ended bool
	// A processing-time window takes the source's end tuples here: the
	// input ended at endAt (Unix ms) when all endTasks sent theirs, and
	// every window holding data closed by endAt+procWindow.
	procWindow int64
	out        api.BoltCollector
	endTasks   int
	ends       map[int]bool
	endAt      int64
}

func (t *terminal) Prepare(ctx api.Context, out api.BoltCollector) error {
	t.res, t.out, t.ends = NewResults(ctx, t.query), out, map[int]bool{}
	if c, ok := ctx.Topology().Component(ctx.ComponentName()); ok {
		for _, in := range c.Inputs {
			if in.Stream == source.EndStream {
				t.endTasks = len(ctx.ComponentTasks(in.Component))
			}
		}
	}
	return t.Bolt.Prepare(ctx, &rows{BoltCollector: out, res: t.res})
}

func (t *terminal) Execute(tp api.Tuple) {
	if t.procWindow > 0 && tp.SourceStream() == source.EndStream {
		t.ends[tp.SourceTask()] = true
		if len(t.ends) == t.endTasks {
			t.endAt = time.Now().UnixMilli()
		}
		t.out.Ack(tp)
		return
	}
	t.Bolt.Execute(tp)
	w, ok := t.Bolt.(interface{ Watermark() int64 })
	switch {
	case !ok || t.ended:
	case t.procWindow > 0 && t.endAt > 0 && w.Watermark() >= t.endAt+t.procWindow,
		t.procWindow == 0 && w.Watermark() >= endThreshold:
		t.ended = true
		t.res.End()
	}
}

// InitState passes the checkpointed states to the wrapped bolt when it
// keeps its state in them (api.Stateful: window and table bolts).
func (t *terminal) InitState(states *api.States) error {
	if s, ok := t.Bolt.(api.Stateful); ok {
		return s.InitState(states)
	}
	return nil
}

// PreSave implements api.Stateful for the wrapped bolt.
func (t *terminal) PreSave(checkpoint int64) error {
	if s, ok := t.Bolt.(api.Stateful); ok {
		return s.PreSave(checkpoint)
	}
	return nil
}

// NotCheckpointed implements api.NotCheckpointed for the wrapped bolt, so
// an effectively-once submission still refuses a final operator whose
// state is not checkpointed.
func (t *terminal) NotCheckpointed() string {
	if nc, ok := t.Bolt.(api.NotCheckpointed); ok {
		return nc.NotCheckpointed()
	}
	return ""
}

// endThreshold: a watermark past it is the end of the input.
const endThreshold = source.EndOfInput / 2

// rows is the collector of a final operator.
type rows struct {
	api.BoltCollector
	res *Results
}

func (r *rows) Emit(values api.Values, _ ...api.Tuple) { r.EmitStream("default", values) }

func (r *rows) EmitStream(stream string, values api.Values, _ ...api.Tuple) {
	switch {
	case stream != "default" || len(values) == 0:
	case len(values) == 1:
		if m, ok := values[0].(multiRows); ok {
			for _, row := range m {
				r.res.Row(row...)
			}
			return
		}
		r.res.Row(values...)
	default:
		r.res.Row(values...)
	}
}

// multiRows is several rows in one emitted value, from a final operator
// whose one result is several rows (a window's ties).
type multiRows [][]any

// End reports the end of the input (table.End.OnEnd of a final operator).
func (r *rows) End() { r.res.End() }

// endRows is the table.End.OnEnd of a final operator.
func endRows(out api.BoltCollector) {
	if r, ok := out.(*rows); ok {
		r.End()
	}
}

// eventBolt runs fn on every event of the streams it subscribes to and
// ends when every source task sent its end tuple (stateless queries).
type eventBolt struct {
	newFn func(ctx api.Context) (func(t api.Tuple, res *Results), error)
	fn    func(t api.Tuple, res *Results)
	res   *Results
	out   api.BoltCollector
	tasks int
	ends  map[int]bool
}

func (p *Plan) stateless(newFn func(ctx api.Context) (func(t api.Tuple, res *Results), error)) api.BoltFactory {
	q := p.q.Name
	return func() api.Bolt { return &eventBolt{newFn: newFn, res: &Results{query: q}} }
}

func (b *eventBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	var err error
	if b.fn, err = b.newFn(ctx); err != nil {
		return err
	}
	b.res = NewResults(ctx, b.res.query)
	b.out, b.ends = out, map[int]bool{}
	if c, ok := ctx.Topology().Component(ctx.ComponentName()); ok {
		for _, in := range c.Inputs {
			if in.Stream == source.EndStream {
				b.tasks = len(ctx.ComponentTasks(in.Component))
			}
		}
	}
	return nil
}

func (b *eventBolt) Execute(t api.Tuple) {
	if t.SourceStream() == source.EndStream {
		b.ends[t.SourceTask()] = true
		if len(b.ends) == b.tasks {
			b.res.End()
		}
	} else if !t.IsTick() {
		b.fn(t, b.res)
	}
	b.out.Ack(t)
}

// ReuseTuples implements api.TupleReuser: the bolt keeps no tuple.
func (b *eventBolt) ReuseTuples() bool { return true }

func (b *eventBolt) Cleanup() {}

func (b *eventBolt) DeclareOutputFields(api.OutputDeclarer) {}

// withEnd subscribes d to the end tuples of the source.
func (p *Plan) withEnd(d *api.BoltDeclarer) *api.BoltDeclarer {
	return d.Input(p.Name("events"), source.EndStream, api.All())
}
