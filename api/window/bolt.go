package window

import (
	"errors"
	"fmt"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// Guarantee says how a window bolt acknowledges its inputs in
// at-least-once mode.
type Guarantee uint8

const (
	// AnchorResults holds each input until every window it was added to
	// has emitted its final result (or update), anchors that result to
	// it, and then acks it: a lost window bolt makes the spouts replay
	// what its windows held (at-least-once; results after a replay may
	// count an element twice). At most MaxAnchors inputs are held per
	// task; beyond that inputs are acked at once and counted in the
	// "window.unanchored" counter (those elements are at-most-once).
	AnchorResults Guarantee = iota
	// AckOnAdd acks each input as soon as its value is folded into the
	// accumulators and emits results unanchored: memory never holds
	// inputs, but a lost window bolt loses its open windows
	// (at-most-once for window results).
	AckOnAdd
)

// Stream identifies an input stream of a window bolt.
type Stream struct {
	Component, ID string
}

// Extractor returns an element's event time.
type Extractor func(api.Tuple) time.Time

// Stream names and default output fields of a window bolt.
const (
	// LateStream carries elements dropped as late, when Spec.LateStream
	// is set: the source component and stream, the element's timestamp
	// (Unix ms) and its values ([]any).
	LateStream = "late"
)

// DefaultFields are the fields of a window bolt's results unless
// Spec.Output says otherwise: key, window start and end (Unix ms, or
// positions for count windows), the result and the firing ("partial",
// "final" or "update").
var DefaultFields = []string{"key", "start", "end", "value", "firing"}

// LateFields are the fields of LateStream.
var LateFields = []string{"component", "stream", "timestamp", "values"}

// Spec describes a window bolt: how elements are keyed and timed, how
// they are assigned to windows and aggregated, and what is emitted.
//
// K is the key type and OUT the result type; with the default output both
// are tuple values, so they must be types the tuple codec knows (basic
// types, or types registered with TopologyBuilder.RegisterType).
type Spec[K comparable, IN, ACC, OUT any] struct {
	// Assigner assigns elements to windows (required).
	Assigner Assigner
	// Time is the time characteristic (default EventTime).
	Time Time
	// Key returns an element's key; nil puts every element under the zero
	// key (one window per window, not per key).
	Key func(api.Tuple) K
	// Value returns the value aggregated (required).
	Value func(api.Tuple) IN
	// Aggregate folds the values of a window (required); see Sum, Count,
	// Reduce, Funcs, and Process for the opt-in full-window function.
	Aggregate AggregateFunc[IN, ACC, OUT]

	// Timestamp extracts the event time of elements of streams without an
	// entry in StreamTimestamps (event time only).
	Timestamp Extractor
	// StreamTimestamps extracts the event time per input stream.
	StreamTimestamps map[Stream]Extractor
	// Watermark, when set, makes the bolt generate its input watermarks
	// itself, one generator per input task over that task's elements,
	// instead of taking them from WatermarkStream. Use it when the inputs
	// do not send watermarks (a plain spout).
	Watermark func() Generator
	// IdleTimeout marks an input task idle when it sent nothing for this
	// long, so it does not hold the watermark back (default 10s; negative:
	// never).
	IdleTimeout time.Duration

	// AllowedLateness keeps a time window after its final result for
	// this long in event time; each element arriving meanwhile emits an
	// Update.
	AllowedLateness time.Duration
	// LateStream emits elements that arrive after every window they
	// belong to was dropped on LateStream (otherwise they are only
	// counted in "window.late").
	LateStream bool
	// EarlyCount emits a Partial result of a window after every
	// EarlyCount elements it received since its last result.
	EarlyCount int
	// EarlyInterval emits a Partial result of every window that changed
	// at most this often (processing time, checked at every tick).
	EarlyInterval time.Duration

	// Guarantee is how inputs are acknowledged (default AnchorResults).
	Guarantee Guarantee
	// MaxAnchors bounds the inputs a task holds as anchors (default
	// 65536).
	MaxAnchors int
	// TickEvery is the bolt's tick interval: idle detection, processing
	// time, early intervals and global triggers advance at ticks (default
	// 100ms).
	TickEvery time.Duration

	// Output turns a result into the emitted values; with it set,
	// OutputFields names them. The default emits DefaultFields.
	Output       func(Result[K, OUT]) api.Values
	OutputFields []string

	// Now is the bolt's clock (time.Now when nil); tests inject one.
	Now func() time.Time
}

func (s *Spec[K, IN, ACC, OUT]) validate() error {
	var errs []error
	if err := s.Assigner.validate(); err != nil {
		errs = append(errs, err)
	}
	if s.Value == nil {
		errs = append(errs, errors.New("no Value function"))
	}
	if s.Aggregate == nil {
		errs = append(errs, errors.New("no Aggregate function"))
	}
	if s.Time == EventTime && s.Assigner.isTime() && s.Timestamp == nil && len(s.StreamTimestamps) == 0 {
		errs = append(errs, errors.New("event time needs Timestamp or StreamTimestamps"))
	}
	if (s.Output == nil) != (s.OutputFields == nil) {
		errs = append(errs, errors.New("set both Output and OutputFields, or neither"))
	}
	if s.EarlyCount < 0 || s.EarlyInterval < 0 || s.AllowedLateness < 0 || s.MaxAnchors < 0 {
		errs = append(errs, errors.New("EarlyCount, EarlyInterval, AllowedLateness and MaxAnchors must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("window spec: %w", err)
	}
	return nil
}

func (s *Spec[K, IN, ACC, OUT]) defaults() {
	if s.IdleTimeout == 0 {
		s.IdleTimeout = 10 * time.Second
	}
	if s.MaxAnchors == 0 {
		s.MaxAnchors = 1 << 16
	}
	if s.TickEvery <= 0 {
		s.TickEvery = 100 * time.Millisecond
	}
	if s.Now == nil {
		s.Now = time.Now
	}
}

// Bolt is a window bolt: an ordinary api.Bolt, so packing, acking, back
// pressure and metrics apply. Add it with SetBolt, which also subscribes
// it to its inputs' watermarks; NewBolt makes one for tests.
type Bolt[K comparable, IN, ACC, OUT any] struct {
	spec    Spec[K, IN, ACC, OUT]
	e       *engine[K, IN, ACC, OUT]
	out     api.BoltCollector
	tracker *Tracker
	gens    map[int]Generator // per input task, with Spec.Watermark
	ingest  int64             // last ingestion stamp
	wmOut   int64             // last watermark emitted
	pub     int64             // value of the watermark counter
	c       counters
	comp    string
	sendWM  bool // a downstream component subscribes to the watermarks
	// eo: the topology runs effectively-once (InitState restores,
	// PreSave saves).
	eo bool
	// byKey: every data input is fields-grouped, so a key's state can be
	// keyed state (each key reaches the task owning its key group).
	byKey bool
	// store and clock are the checkpointed states (InitState).
	store keyStore[K, ACC]
	clock *api.State[string, clockRecord]
}

type counters struct {
	watermark, late, final, partial, updates, unanchored, idle *api.Counter
	seen                                                       Stats
	idleSeen                                                   int64
}

// NewBolt returns a window bolt for spec.
func NewBolt[K comparable, IN, ACC, OUT any](spec Spec[K, IN, ACC, OUT]) (*Bolt[K, IN, ACC, OUT], error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	spec.defaults()
	return &Bolt[K, IN, ACC, OUT]{spec: spec}, nil
}

// Prepare implements api.Bolt.
func (b *Bolt[K, IN, ACC, OUT]) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	b.comp = ctx.ComponentName()
	b.eo = effectivelyOnce(ctx)
	s := &b.spec
	cfg := engineConfig{
		assigner:   s.Assigner,
		lateness:   s.AllowedLateness.Milliseconds(),
		earlyCount: int64(s.EarlyCount),
		earlyEvery: s.EarlyInterval.Milliseconds(),
		// Under effectively-once nothing is acked: the checkpoint, not
		// anchors, makes the results exact.
		anchor:     s.Guarantee == AnchorResults && !b.eo,
		maxAnchors: s.MaxAnchors,
	}
	b.e = newEngine(cfg, s.Aggregate, b.emit, out.Ack)
	b.wmOut = NoWatermark
	b.sendWM = subscribed(ctx, b.comp)
	var wmTasks, dataTasks []int
	byKey := true
	if topo := ctx.Topology(); topo != nil {
		if c, ok := topo.Component(b.comp); ok {
			for _, in := range c.Inputs {
				if in.Stream == WatermarkStream {
					wmTasks = append(wmTasks, ctx.ComponentTasks(in.Component)...)
				} else {
					dataTasks = append(dataTasks, ctx.ComponentTasks(in.Component)...)
					byKey = byKey && in.Grouping == topology.Fields
				}
			}
		}
	}
	b.byKey = byKey
	idle := s.IdleTimeout
	if idle < 0 {
		idle = 0
	}
	now := s.Now()
	switch {
	case s.Time != EventTime:
	case s.Watermark != nil:
		b.gens = map[int]Generator{}
		b.tracker = NewTracker(dataTasks, idle, now)
	case len(wmTasks) > 0:
		b.tracker = NewTracker(wmTasks, idle, now)
	case s.Assigner.isTime() || s.Assigner.kind == kindGlobal:
		return fmt.Errorf("window bolt %s: event time needs watermarks: add its inputs with window.Builder from watermark-emitting components, or set Spec.Watermark", b.comp)
	}
	b.c = counters{
		watermark:  ctx.Counter("window.watermark"),
		late:       ctx.Counter("window.late"),
		final:      ctx.Counter("window.final"),
		partial:    ctx.Counter("window.partial"),
		updates:    ctx.Counter("window.updates"),
		unanchored: ctx.Counter("window.unanchored"),
		idle:       ctx.Counter("window.idle.marks"),
	}
	return nil
}

// Execute implements api.Bolt.
func (b *Bolt[K, IN, ACC, OUT]) Execute(t api.Tuple) {
	now := b.spec.Now()
	switch {
	case t.IsTick():
		b.advance(now)
		b.e.tick(now.UnixMilli())
		b.publish()
		return
	case t.SourceStream() == WatermarkStream:
		if b.tracker != nil {
			b.tracker.Update(t.SourceTask(), t.Int64(0), now)
		}
		b.out.Ack(t)
		b.advance(now)
		b.publish()
		return
	}
	var ts int64
	switch b.spec.Time {
	case EventTime:
		ts = b.timestamp(t)
		if b.gens != nil {
			g := b.gens[t.SourceTask()]
			if g == nil {
				g = b.spec.Watermark()
				b.gens[t.SourceTask()] = g
			}
			g.OnEvent(ts)
		}
	case ProcessingTime:
		ts = now.UnixMilli()
	case IngestionTime:
		ts = max(now.UnixMilli(), b.ingest)
		b.ingest = ts
	}
	var k K
	if b.spec.Key != nil {
		k = b.spec.Key(t)
	}
	late, held := b.e.add(k, b.spec.Value(t), ts, t, now.UnixMilli())
	if late && b.spec.LateStream {
		b.out.EmitStream(LateStream, api.Values{t.SourceComponent(), t.SourceStream(), ts, append([]any(nil), t.Values()...)}, t)
	}
	if !held {
		b.out.Ack(t)
	}
	if b.tracker != nil {
		if b.gens != nil {
			b.tracker.Update(t.SourceTask(), b.gens[t.SourceTask()].Watermark(), now)
		} else {
			b.tracker.Observe(t.SourceTask(), now)
		}
	}
	b.advance(now)
	b.publish()
}

func (b *Bolt[K, IN, ACC, OUT]) timestamp(t api.Tuple) int64 {
	if len(b.spec.StreamTimestamps) > 0 {
		if x, ok := b.spec.StreamTimestamps[Stream{t.SourceComponent(), t.SourceStream()}]; ok {
			return x(t).UnixMilli()
		}
	}
	if b.spec.Timestamp == nil {
		return 0
	}
	return b.spec.Timestamp(t).UnixMilli()
}

// advance moves the watermark, fires what it closes and sends the new
// watermark downstream after the results (so results are never behind
// the watermark that follows them).
func (b *Bolt[K, IN, ACC, OUT]) advance(now time.Time) {
	var wm int64
	switch {
	case b.spec.Time != EventTime:
		wm = now.UnixMilli() - 1
	case b.tracker != nil:
		wm, _ = b.tracker.Advance(now)
	default:
		return // count windows without watermarks
	}
	b.e.advance(wm, now.UnixMilli())
	if wm > b.wmOut {
		b.wmOut = wm
		if b.sendWM {
			b.out.EmitStream(WatermarkStream, api.Values{wm})
		}
	}
}

// publish updates the counters: "window.watermark" holds the watermark
// in Unix ms (a counter, so it only grows, as the watermark does).
func (b *Bolt[K, IN, ACC, OUT]) publish() {
	if wm := b.e.wm; wm > b.pub && wm > 0 {
		b.c.watermark.Add(wm - b.pub)
		b.pub = wm
	}
	s := b.e.stats
	b.c.late.Add(s.Late - b.c.seen.Late)
	b.c.final.Add(s.Final - b.c.seen.Final)
	b.c.partial.Add(s.Partial - b.c.seen.Partial)
	b.c.updates.Add(s.Updates - b.c.seen.Updates)
	b.c.unanchored.Add(s.Unanchored - b.c.seen.Unanchored)
	b.c.seen = s
	if b.tracker != nil {
		m := b.tracker.IdleMarks()
		b.c.idle.Add(m - b.c.idleSeen)
		b.c.idleSeen = m
	}
}

func (b *Bolt[K, IN, ACC, OUT]) emit(r Result[K, OUT], anchors []api.Tuple) {
	var v api.Values
	if b.spec.Output != nil {
		v = b.spec.Output(r)
	} else {
		v = api.Values{r.Key, r.Window.Start, r.Window.End, r.Value, r.Firing.String()}
	}
	b.out.Emit(v, anchors...)
}

// Watermark returns the bolt's current watermark (Unix ms).
func (b *Bolt[K, IN, ACC, OUT]) Watermark() int64 { return b.e.wm }

// Stats returns what the bolt's windows did so far and hold now.
func (b *Bolt[K, IN, ACC, OUT]) Stats() Stats { return b.e.snapshot() }

// Cleanup implements api.Bolt.
func (b *Bolt[K, IN, ACC, OUT]) Cleanup() {}

// DeclareOutputFields implements api.Bolt.
func (b *Bolt[K, IN, ACC, OUT]) DeclareOutputFields(d api.OutputDeclarer) {
	if b.spec.OutputFields != nil {
		d.Declare(b.spec.OutputFields...)
	} else {
		d.Declare(DefaultFields...)
	}
	d.DeclareStream(WatermarkStream, WatermarkField)
	if b.spec.LateStream {
		d.DeclareStream(LateStream, LateFields...)
	}
}
