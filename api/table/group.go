package table

import (
	"errors"
	"fmt"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/window"
)

// EndStream is the stream on which a bolt with End.Forward passes the end
// of its input on: one tuple (field "end") per task, after its last
// results.
const EndStream = "end"

// End says where the end-of-input markers of a bounded input come from:
// one tuple on Stream from every task of Component.
type End struct {
	Component, Stream string
	// OnEnd runs once the markers of every task arrived (after the
	// bolt's final flush).
	OnEnd func(out api.BoltCollector)
	// Forward declares EndStream and emits one marker on it at the end,
	// so the next operator can take End{Component: this bolt, Stream:
	// EndStream}.
	Forward bool
}

// finish runs the end of the input: the forwarded marker, then OnEnd.
func (e *endTracker) finish(out api.BoltCollector) {
	if e.end.Forward {
		out.EmitStream(EndStream, api.Values{int64(0)})
	}
	if e.end.OnEnd != nil {
		e.end.OnEnd(out)
	}
}

func (e *endTracker) declare(d api.OutputDeclarer) {
	if e.end.Forward {
		d.DeclareStream(EndStream, "end")
	}
}

// endTracker counts end-of-input markers; the tasks whose markers
// arrived are in a state (the key -1 says the end was complete).
type endTracker struct {
	end   End
	tasks int
	seen  *api.State[int, bool]
}

// EndState is the state in which a table bolt keeps the end-of-input
// markers it received.
const EndState = "table.end"

func (e *endTracker) prepare(ctx api.Context) {
	if e.end.Component != "" {
		e.tasks = len(ctx.ComponentTasks(e.end.Component))
	}
}

func (e *endTracker) bind(states *api.States) (err error) {
	e.seen, err = api.NewState[int, bool](states, EndState)
	return err
}

// marker reports whether t is an end marker, and whether it completed the
// end of the input.
func (e *endTracker) marker(t api.Tuple) (isMarker, complete bool) {
	if e.end.Component == "" || t.SourceComponent() != e.end.Component || t.SourceStream() != e.end.Stream {
		return false, false
	}
	e.seen.Put(t.SourceTask(), true)
	if _, done := e.seen.Get(-1); !done && e.seen.Len() >= e.tasks {
		e.seen.Put(-1, true)
		return true, true
	}
	return true, false
}

// GroupSpec describes a GroupBolt.
type GroupSpec[K comparable, IN, ACC, OUT any] struct {
	// Key returns a tuple's group (required).
	Key func(api.Tuple) K
	// Value returns what is aggregated (required).
	Value func(api.Tuple) IN
	// Aggregate folds a group's values (required); Merge is not used.
	Aggregate window.AggregateFunc[IN, ACC, OUT]
	// Output turns a group's result into the emitted values (required);
	// it may emit more than one tuple, or none.
	Output func(key K, result OUT, emit func(api.Values))
	// OutputFields names the emitted fields (required).
	OutputFields []string
	// Flush is the mini-batch interval (default 1s): changed groups are
	// emitted at the first tick after it.
	Flush time.Duration
	// End, when set, flushes at the end of a bounded input.
	End End
	// Accept, when set, drops the tuples it rejects (a filter before the
	// aggregation).
	Accept func(api.Tuple) bool
}

// GroupBolt aggregates groups over the whole stream and emits upserts.
// Its accumulators, the groups changed since the last flush and the
// end-of-input markers are in its states (GroupsState, ChangedState,
// EndState), so under effectively-once a rollback restores them with the
// input (K and ACC are encoded with api.DefaultSerializer).
type GroupBolt[K comparable, IN, ACC, OUT any] struct {
	spec  GroupSpec[K, IN, ACC, OUT]
	out   api.BoltCollector
	accs  *api.State[K, ACC]
	dirty *api.State[K, bool]
	last  time.Time
	end   endTracker
}

// State names of a GroupBolt.
const (
	// GroupsState holds the accumulator of every group.
	GroupsState = "table.groups"
	// ChangedState holds the groups changed since the last flush.
	ChangedState = "table.changed"
)

// NewGroupBolt returns a bolt of spec, or what is missing from it.
func NewGroupBolt[K comparable, IN, ACC, OUT any](spec GroupSpec[K, IN, ACC, OUT]) (*GroupBolt[K, IN, ACC, OUT], error) {
	if spec.Key == nil || spec.Value == nil || spec.Aggregate == nil || spec.Output == nil || len(spec.OutputFields) == 0 {
		return nil, errors.New("table: a GroupSpec needs Key, Value, Aggregate, Output and OutputFields")
	}
	if spec.Flush <= 0 {
		spec.Flush = time.Second
	}
	return &GroupBolt[K, IN, ACC, OUT]{spec: spec, end: endTracker{end: spec.End}}, nil
}

// Prepare implements api.Bolt.
func (b *GroupBolt[K, IN, ACC, OUT]) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	b.last = time.Now()
	b.end.prepare(ctx)
	// Outside effectively-once no InitState comes: the states are then
	// the task's own.
	return b.InitState(api.NewStates())
}

// InitState implements api.Stateful.
func (b *GroupBolt[K, IN, ACC, OUT]) InitState(states *api.States) error {
	accs, err := api.NewState[K, ACC](states, GroupsState)
	if err != nil {
		return fmt.Errorf("table group bolt: %w", err)
	}
	dirty, err := api.NewState[K, bool](states, ChangedState)
	if err != nil {
		return fmt.Errorf("table group bolt: %w", err)
	}
	if err := b.end.bind(states); err != nil {
		return fmt.Errorf("table group bolt: %w", err)
	}
	b.accs, b.dirty = accs, dirty
	return nil
}

// PreSave implements api.Stateful: everything is in the states already.
func (b *GroupBolt[K, IN, ACC, OUT]) PreSave(int64) error { return nil }

// Execute implements api.Bolt.
func (b *GroupBolt[K, IN, ACC, OUT]) Execute(t api.Tuple) {
	defer b.out.Ack(t)
	if t.IsTick() {
		if time.Since(b.last) >= b.spec.Flush {
			b.flush()
		}
		return
	}
	if marker, complete := b.end.marker(t); marker {
		if complete {
			b.flush()
			b.end.finish(b.out)
		}
		return
	}
	if b.spec.Accept != nil && !b.spec.Accept(t) {
		return
	}
	k := b.spec.Key(t)
	acc, ok := b.accs.Get(k)
	if !ok {
		acc = b.spec.Aggregate.Init()
	}
	b.accs.Put(k, b.spec.Aggregate.Add(acc, b.spec.Value(t)))
	b.dirty.Put(k, true)
}

func (b *GroupBolt[K, IN, ACC, OUT]) flush() {
	b.last = time.Now()
	emit := func(v api.Values) { b.out.Emit(v) }
	var changed []K
	b.dirty.Range(func(k K, _ bool) bool {
		changed = append(changed, k)
		return true
	})
	for _, k := range changed {
		acc, _ := b.accs.Get(k)
		b.spec.Output(k, b.spec.Aggregate.Result(acc), emit)
		b.dirty.Delete(k)
	}
}

// Groups returns the number of groups the task holds.
func (b *GroupBolt[K, IN, ACC, OUT]) Groups() int { return b.accs.Len() }

// Cleanup implements api.Bolt.
func (b *GroupBolt[K, IN, ACC, OUT]) Cleanup() {}

// DeclareOutputFields implements api.Bolt.
func (b *GroupBolt[K, IN, ACC, OUT]) DeclareOutputFields(d api.OutputDeclarer) {
	d.Declare(b.spec.OutputFields...)
	b.end.declare(d)
}
