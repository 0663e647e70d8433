package streamlet

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/core/tuple"
)

type nodeKind uint8

const (
	kindSource nodeKind = iota + 1
	kindOp              // map, flat map, filter, transform, key by, clone, sink...
	kindUnion
	kindWindow // reduce by key and window, join
)

// node is one stage of the pipeline.
type node struct {
	b           *Builder
	id          int
	name        string // user name, or kind-N
	op          string // what it does, for errors and default names
	kind        nodeKind
	parallelism int
	separate    bool // never fused with its neighbours
	parents     []*node
	children    []*node
	// keyed: the stage emits (key, value) pairs and its consumers
	// subscribe by key.
	keyed bool
	// partition, when set, routes the stage's output with a custom
	// grouping (Repartition).
	partition func(v any, tasks int) []int
	// multi: each tuple holds a list of elements (join output).
	multi bool
	// vc encodes the stage's output values for the tuple codec and back.
	vc valueCodec
	// newOp makes the per-task function of an op stage: it processes one
	// input element and calls emit for each output element.
	newOp func(ctx api.Context) (process func(v any, emit func(any)), cleanup func(), err error)
	// newSource makes a source stage's per-task supplier.
	newSource func(ctx api.Context) (func() (any, bool), error)
	// stamp, set on a keyed stage feeding an event-time window, gives an
	// output value's event time: the stage's component then generates
	// watermarks (bounded by delay) and sends them in-band to the window.
	stamp func(v any) time.Time
	delay time.Duration
	// newBolt makes the bolt of a window stage; it is given the
	// component names of its inputs.
	newBolt func(inputs []string) (api.BoltFactory, error)
}

// valueCodec turns stage output values into tuple values and back. Most
// values pass as they are (they must be types the tuple codec knows);
// window results are encoded as lists.
type valueCodec struct {
	enc func(any) any
	dec func(any) any
}

var identity = valueCodec{enc: func(v any) any { return v }, dec: func(v any) any { return v }}

// Builder builds a streamlet pipeline and compiles it to a topology.
// Methods record problems; Compile reports all of them.
type Builder struct {
	name     string
	nodes    []*node
	problems []string
	noFusing bool
	types    []registration
	config   map[string]string
}

type registration struct {
	id     uint16
	sample any
	codec  tuple.Codec
}

// New starts a pipeline; name is the topology's name.
func New(name string) *Builder { return &Builder{name: name, config: map[string]string{}} }

// DisableFusing compiles every stage to its own component.
func (b *Builder) DisableFusing() *Builder { b.noFusing = true; return b }

// RegisterType lets values of a user type cross processes (see
// api.TopologyBuilder.RegisterType).
func (b *Builder) RegisterType(id uint16, sample any, codec tuple.Codec) *Builder {
	b.types = append(b.types, registration{id, sample, codec})
	return b
}

// SetConfig sets a topology setting.
func (b *Builder) SetConfig(key, value string) *Builder { b.config[key] = value; return b }

func (b *Builder) add(n *node, parents ...*node) *node {
	n.b = b
	n.id = len(b.nodes) + 1
	n.parallelism = 1
	if n.vc.enc == nil {
		n.vc = identity
	}
	for _, p := range parents {
		if p.b != b {
			b.problems = append(b.problems, fmt.Sprintf("stage %s: input from another Builder", n.label()))
		}
		n.parents = append(n.parents, p)
		p.children = append(p.children, n)
		if n.parallelism < p.parallelism && n.kind == kindOp {
			n.parallelism = p.parallelism // ops inherit their input's parallelism
		}
	}
	b.nodes = append(b.nodes, n)
	return n
}

func (n *node) label() string {
	if n.name != "" {
		return n.name
	}
	return fmt.Sprintf("%s-%d", n.op, n.id)
}

// Streamlet is a typed stream of T.
type Streamlet[T any] struct{ n *node }

// KeyedStreamlet is a stream of T partitioned by a key K.
type KeyedStreamlet[K comparable, T any] struct{ n *node }

// Named names the stage (its component, or its part of a fused
// component's name).
func (s Streamlet[T]) Named(name string) Streamlet[T] { s.n.name = name; return s }

// Parallelism sets the stage's number of tasks (default: its input's, 1
// for sources and windows).
func (s Streamlet[T]) Parallelism(n int) Streamlet[T] { s.n.parallelism = n; return s }

// Separate keeps the stage in its own component (no fusing).
func (s Streamlet[T]) Separate() Streamlet[T] { s.n.separate = true; return s }

// Named names the key-by stage.
func (s KeyedStreamlet[K, T]) Named(name string) KeyedStreamlet[K, T] {
	s.n.name = name
	return s
}

// Parallelism sets the key-by stage's tasks.
func (s KeyedStreamlet[K, T]) Parallelism(n int) KeyedStreamlet[K, T] {
	s.n.parallelism = n
	return s
}

// Supplier returns the next element of a source, or false when it has
// none right now (the runtime then backs off).
type Supplier[T any] func() (T, bool)

// Source adds a source stage: newSupplier is called once per task.
// Sources are at-most-once: elements are emitted untracked, because a
// supplier cannot replay.
func Source[T any](b *Builder, name string, newSupplier func(ctx api.Context) Supplier[T]) Streamlet[T] {
	n := b.add(&node{op: "source", name: name, kind: kindSource})
	n.newSource = func(ctx api.Context) (func() (any, bool), error) {
		sup := newSupplier(ctx)
		if sup == nil {
			return nil, fmt.Errorf("source %s: the supplier is nil", n.label())
		}
		return func() (any, bool) { v, ok := sup(); return v, ok }, nil
	}
	return Streamlet[T]{n}
}

// Slice is a source whose tasks each emit the elements of elems once (a
// bounded source for examples and tests); task i emits elems(i).
func Slice[T any](b *Builder, name string, elems func(task int) []T) Streamlet[T] {
	return Source(b, name, func(ctx api.Context) Supplier[T] {
		all, next := elems(ctx.TaskIndex()), 0
		return func() (T, bool) {
			if next >= len(all) {
				var zero T
				return zero, false
			}
			next++
			return all[next-1], true
		}
	})
}

func op[T, U any](s *node, name string, newFn func(ctx api.Context) (func(T, func(U)), func(), error)) *node {
	n := s.b.add(&node{op: name, kind: kindOp}, s)
	n.newOp = func(ctx api.Context) (func(any, func(any)), func(), error) {
		fn, cleanup, err := newFn(ctx)
		if err != nil {
			return nil, nil, err
		}
		return func(v any, emit func(any)) {
			fn(v.(T), func(u U) { emit(u) })
		}, cleanup, nil
	}
	return n
}

func stateless[T, U any](fn func(T, func(U))) func(api.Context) (func(T, func(U)), func(), error) {
	return func(api.Context) (func(T, func(U)), func(), error) { return fn, nil, nil }
}

// Map applies fn to every element.
func Map[T, U any](s Streamlet[T], fn func(T) U) Streamlet[U] {
	return Streamlet[U]{op(s.n, "map", stateless(func(v T, emit func(U)) { emit(fn(v)) }))}
}

// FlatMap emits every element fn returns.
func FlatMap[T, U any](s Streamlet[T], fn func(T) []U) Streamlet[U] {
	return Streamlet[U]{op(s.n, "flatmap", stateless(func(v T, emit func(U)) {
		for _, u := range fn(v) {
			emit(u)
		}
	}))}
}

// Filter keeps the elements fn accepts.
func Filter[T any](s Streamlet[T], fn func(T) bool) Streamlet[T] {
	return Streamlet[T]{op(s.n, "filter", stateless(func(v T, emit func(T)) {
		if fn(v) {
			emit(v)
		}
	}))}
}

// Transformer is a stateful per-task stage (Transform).
type Transformer[T, U any] interface {
	Setup(ctx api.Context) error
	Transform(v T, emit func(U))
	Cleanup()
}

// Transform runs a Transformer, one per task made by newT.
func Transform[T, U any](s Streamlet[T], newT func() Transformer[T, U]) Streamlet[U] {
	return Streamlet[U]{op(s.n, "transform", func(ctx api.Context) (func(T, func(U)), func(), error) {
		t := newT()
		if err := t.Setup(ctx); err != nil {
			return nil, nil, err
		}
		return t.Transform, t.Cleanup, nil
	})}
}

// Union merges two streams of the same type.
func Union[T any](a, b Streamlet[T]) Streamlet[T] {
	n := a.n.b.add(&node{op: "union", kind: kindUnion}, a.n, b.n)
	n.parallelism = max(a.n.parallelism, b.n.parallelism)
	return Streamlet[T]{n}
}

// Clone returns n streamlets that each receive every element of s.
func Clone[T any](s Streamlet[T], n int) []Streamlet[T] {
	out := make([]Streamlet[T], n)
	for i := range out {
		out[i] = Streamlet[T]{op(s.n, "clone", stateless(func(v T, emit func(T)) { emit(v) }))}
	}
	return out
}

// Repartition sends the elements to n tasks chosen by partitioner, which
// returns task indexes in [0, tasks) for each element.
func Repartition[T any](s Streamlet[T], n int, partitioner func(v T, tasks int) []int) Streamlet[T] {
	out := op(s.n, "repartition", stateless(func(v T, emit func(T)) { emit(v) }))
	out.parallelism = n
	out.partition = func(v any, tasks int) []int { return partitioner(v.(T), tasks) }
	return Streamlet[T]{out}
}

// KeyBy partitions s by key: the stages consuming it get every element of
// one key in the same task. K must be a type the tuple codec knows.
func KeyBy[T any, K comparable](s Streamlet[T], key func(T) K) KeyedStreamlet[K, T] {
	n := op(s.n, "keyby", stateless(func(v T, emit func(any)) { emit(keyValue{key(v), v}) }))
	n.keyed = true
	n.vc = s.n.vc
	return KeyedStreamlet[K, T]{n}
}

// keyValue is what a key-by stage emits inside a fused component.
type keyValue struct {
	key, value any
}

// Sink is a terminal stage with a per-task lifecycle.
type Sink[T any] interface {
	Setup(ctx api.Context) error
	Put(v T) error
	Cleanup()
}

// ToSink ends s in sinks made by newSink, one per task; an error from Put
// is reported to the topology manager.
func ToSink[T any](s Streamlet[T], newSink func() Sink[T]) Terminal {
	var n *node
	n = op(s.n, "sink", func(ctx api.Context) (func(T, func(struct{})), func(), error) {
		sk := newSink()
		if err := sk.Setup(ctx); err != nil {
			return nil, nil, err
		}
		return func(v T, _ func(struct{})) {
			if err := sk.Put(v); err != nil {
				ctx.Logger().Warn("streamlet sink: put failed", zap.String("stage", n.label()), zap.Error(err))
			}
		}, sk.Cleanup, nil
	})
	return Terminal{n}
}

// Consume ends s in fn, called for every element.
func Consume[T any](s Streamlet[T], fn func(T)) Terminal {
	return Terminal{op(s.n, "consume", stateless(func(v T, _ func(struct{})) { fn(v) }))}
}

// Log ends s by logging every element at info level.
func Log[T any](s Streamlet[T]) Terminal {
	return Terminal{op(s.n, "log", func(ctx api.Context) (func(T, func(struct{})), func(), error) {
		log := ctx.Logger()
		return func(v T, _ func(struct{})) { log.Info(fmt.Sprint(v)) }, nil, nil
	})}
}

// Terminal is a stage that ends a pipeline (ToSink, Consume, Log).
type Terminal struct{ n *node }

// Named names the stage.
func (s Terminal) Named(name string) Terminal { s.n.name = name; return s }

// Parallelism sets the stage's number of tasks.
func (s Terminal) Parallelism(n int) Terminal { s.n.parallelism = n; return s }

// Separate keeps the stage in its own component (no fusing).
func (s Terminal) Separate() Terminal { s.n.separate = true; return s }

// WindowConfig says how ReduceByKeyAndWindow and Join window their
// inputs.
type WindowConfig struct {
	Assigner window.Assigner
	// Time is the time characteristic. Event time (the zero value) needs
	// the stage's timestamp functions; without them the stage uses
	// processing time.
	Time window.Time
	// MaxDelay bounds the out-of-orderness of event time: the component
	// that emits the keyed input generates watermarks from the elements'
	// timestamps (window.BoundedOutOfOrderness) and sends them in-band to
	// every window task.
	MaxDelay        time.Duration
	AllowedLateness time.Duration
	EarlyCount      int
	EarlyInterval   time.Duration
	IdleTimeout     time.Duration
	Guarantee       window.Guarantee
}

// Windowed is one result of a windowed stage.
type Windowed[K comparable, V any] struct {
	Key    K
	Window window.Window
	Value  V
	Firing window.Firing
}

func windowCodec[K comparable, V any](inner valueCodec) valueCodec {
	return valueCodec{
		enc: func(v any) any {
			w := v.(Windowed[K, V])
			return []any{w.Key, w.Window.Start, w.Window.End, inner.enc(w.Value), uint8(w.Firing)}
		},
		dec: func(v any) any {
			l := v.([]any)
			return Windowed[K, V]{Key: l[0].(K), Window: window.Window{Start: l[1].(int64), End: l[2].(int64)},
				Value: inner.dec(l[3]).(V), Firing: window.Firing(l[4].(uint8))}
		},
	}
}

// ReduceByKeyAndWindow aggregates each key's elements per window with agg
// (incrementally: one accumulator per key and window). With
// WindowConfig.Time set to window.EventTime, timestamp gives each
// element's event time.
func ReduceByKeyAndWindow[K comparable, T, ACC, OUT any](s KeyedStreamlet[K, T], cfg WindowConfig,
	timestamp func(T) time.Time, agg window.AggregateFunc[T, ACC, OUT]) Streamlet[Windowed[K, OUT]] {
	in := s.n
	n := in.b.add(&node{op: "window", kind: kindWindow, vc: windowCodec[K, OUT](identity)}, in)
	dec := in.vc.dec
	if cfg.timeOrDefault(timestamp != nil) == window.EventTime && timestamp != nil {
		in.stamp, in.delay = func(v any) time.Time { return timestamp(v.(T)) }, cfg.MaxDelay
	}
	n.newBolt = func(inputs []string) (api.BoltFactory, error) {
		spec := window.Spec[K, T, ACC, OUT]{
			Assigner:  cfg.Assigner,
			Time:      cfg.timeOrDefault(timestamp != nil),
			Key:       func(t api.Tuple) K { return t.Value(0).(K) },
			Value:     func(t api.Tuple) T { return dec(t.Value(1)).(T) },
			Aggregate: agg,
		}
		cfg.apply(&spec.AllowedLateness, &spec.EarlyCount, &spec.EarlyInterval, &spec.IdleTimeout, &spec.Guarantee)
		if spec.Time == window.EventTime {
			spec.Timestamp = func(t api.Tuple) time.Time { return timestamp(dec(t.Value(1)).(T)) }
		}
		enc := n.vc.enc
		spec.Output = func(r window.Result[K, OUT]) api.Values {
			return api.Values{enc(Windowed[K, OUT]{Key: r.Key, Window: r.Window, Value: r.Value, Firing: r.Firing})}
		}
		spec.OutputFields = []string{"value"}
		if _, err := window.NewBolt(spec); err != nil {
			return nil, fmt.Errorf("stage %s: %w", n.label(), err)
		}
		return func() api.Bolt { wb, _ := window.NewBolt(spec); return wb }, nil
	}
	return Streamlet[Windowed[K, OUT]]{n}
}

func (c WindowConfig) timeOrDefault(hasTimestamp bool) window.Time {
	if c.Time == window.EventTime && !hasTimestamp {
		return window.ProcessingTime
	}
	return c.Time
}

func (c WindowConfig) apply(lateness *time.Duration, early *int, every *time.Duration, idle *time.Duration, g *window.Guarantee) {
	*lateness, *early, *every, *idle, *g = c.AllowedLateness, c.EarlyCount, c.EarlyInterval, c.IdleTimeout, c.Guarantee
}

// JoinType is the kind of a Join.
type JoinType uint8

const (
	// Inner emits a pair for every left and right element of a key in a
	// window.
	Inner JoinType = iota
	// Left also emits each left element without a match, with a nil right.
	Left
	// Right also emits each right element without a match, with a nil left.
	Right
	// FullOuter emits unmatched elements of both sides.
	FullOuter
)

// joinElem is one element of a join window: from the left or the right.
// Its fields are exported for the state serializer: a join's open windows are
// checkpointed with their elements.
type joinElem[L, R any] struct {
	IsLeft bool
	L      L
	R      R
}

// Join joins two keyed streamlets within windows: when a window closes,
// fn is called for the pairs of its left and right elements with the same
// key (Left, Right and FullOuter add the unmatched ones with a nil
// partner). A join keeps every element of its open windows (it is a
// full-window function by nature). With WindowConfig.Time set to
// window.EventTime, leftTime and rightTime give the event times.
func Join[K comparable, L, R, OUT any](left KeyedStreamlet[K, L], right KeyedStreamlet[K, R], kind JoinType,
	cfg WindowConfig, leftTime func(L) time.Time, rightTime func(R) time.Time, fn func(key K, l *L, r *R) OUT) Streamlet[OUT] {
	b := left.n.b
	n := b.add(&node{op: "join", kind: kindWindow, multi: true}, left.n, right.n)
	decL, decR := left.n.vc.dec, right.n.vc.dec
	if cfg.timeOrDefault(leftTime != nil && rightTime != nil) == window.EventTime && leftTime != nil && rightTime != nil {
		left.n.stamp, left.n.delay = func(v any) time.Time { return leftTime(v.(L)) }, cfg.MaxDelay
		right.n.stamp, right.n.delay = func(v any) time.Time { return rightTime(v.(R)) }, cfg.MaxDelay
	}
	n.newBolt = func(inputs []string) (api.BoltFactory, error) {
		leftComp := inputs[0]
		isLeft := func(t api.Tuple) bool { return t.SourceComponent() == leftComp }
		spec := window.Spec[K, joinElem[L, R], []joinElem[L, R], []any]{
			Assigner: cfg.Assigner,
			Time:     cfg.timeOrDefault(leftTime != nil && rightTime != nil),
			Key:      func(t api.Tuple) K { return t.Value(0).(K) },
			Value: func(t api.Tuple) joinElem[L, R] {
				if isLeft(t) {
					return joinElem[L, R]{IsLeft: true, L: decL(t.Value(1)).(L)}
				}
				return joinElem[L, R]{R: decR(t.Value(1)).(R)}
			},
		}
		cfg.apply(&spec.AllowedLateness, &spec.EarlyCount, &spec.EarlyInterval, &spec.IdleTimeout, &spec.Guarantee)
		if spec.Time == window.EventTime {
			spec.Timestamp = func(t api.Tuple) time.Time {
				if isLeft(t) {
					return leftTime(decL(t.Value(1)).(L))
				}
				return rightTime(decR(t.Value(1)).(R))
			}
		}
		// The join needs the key in the result, so it is computed in
		// Output from the window's elements.
		spec.Aggregate = window.Process(func(elems []joinElem[L, R]) []any {
			out := make([]any, len(elems))
			for i, e := range elems {
				out[i] = e
			}
			return out
		})
		spec.Output = func(r window.Result[K, []any]) api.Values {
			var ls []L
			var rs []R
			for _, e := range r.Value {
				je := e.(joinElem[L, R])
				if je.IsLeft {
					ls = append(ls, je.L)
				} else {
					rs = append(rs, je.R)
				}
			}
			var out []any
			emit := func(o OUT) { out = append(out, o) }
			for i := range ls {
				for j := range rs {
					emit(fn(r.Key, &ls[i], &rs[j]))
				}
			}
			if len(rs) == 0 && (kind == Left || kind == FullOuter) {
				for i := range ls {
					emit(fn(r.Key, &ls[i], nil))
				}
			}
			if len(ls) == 0 && (kind == Right || kind == FullOuter) {
				for j := range rs {
					emit(fn(r.Key, nil, &rs[j]))
				}
			}
			return api.Values{out}
		}
		spec.OutputFields = []string{"value"}
		if _, err := window.NewBolt(spec); err != nil {
			return nil, fmt.Errorf("stage %s: %w", n.label(), err)
		}
		return func() api.Bolt { wb, _ := window.NewBolt(spec); return wb }, nil
	}
	return Streamlet[OUT]{n}
}
