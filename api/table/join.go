package table

import (
	"errors"
	"fmt"

	"github.com/egret-stream/egret/api"
)

// JoinSpec describes a JoinBolt: the regular inner equi-join of a left
// and a right stream.
type JoinSpec[K comparable, L, R any] struct {
	// IsLeft tells the left input's tuples from the right's (required).
	IsLeft func(api.Tuple) bool
	// LeftKey and RightKey return the join keys; Left and Right decode
	// the elements; AcceptLeft and AcceptRight, when set, drop the
	// elements they reject before they are kept (a filter before the
	// join).
	LeftKey     func(api.Tuple) K
	RightKey    func(api.Tuple) K
	Left        func(api.Tuple) L
	Right       func(api.Tuple) R
	AcceptLeft  func(api.Tuple) bool
	AcceptRight func(api.Tuple) bool
	// Where, when set, is the join condition beyond the equal keys (an
	// interval join's time bounds, for example): only the pairs it
	// accepts are emitted.
	Where func(l *L, r *R) bool
	// Output turns a joined pair into the emitted values (required).
	Output       func(l *L, r *R) api.Values
	OutputFields []string
	// End, when set, calls End.OnEnd at the end of a bounded input.
	End End
}

// JoinBolt is a regular inner join: it keeps every accepted element of
// both sides per key, and emits each pair once, when its second element
// arrives. Both sides are in its states (LeftState, RightState), so under
// effectively-once a rollback restores them with the input: K, L and R
// are encoded with api.DefaultSerializer.
type JoinBolt[K comparable, L, R any] struct {
	spec  JoinSpec[K, L, R]
	out   api.BoltCollector
	left  *api.State[K, []L]
	right *api.State[K, []R]
	end   endTracker
}

// State names of a JoinBolt.
const (
	// LeftState and RightState hold each side's elements per key.
	LeftState  = "table.left"
	RightState = "table.right"
)

// NewJoinBolt returns a bolt of spec, or what is missing from it.
func NewJoinBolt[K comparable, L, R any](spec JoinSpec[K, L, R]) (*JoinBolt[K, L, R], error) {
	if spec.IsLeft == nil || spec.LeftKey == nil || spec.RightKey == nil || spec.Left == nil || spec.Right == nil ||
		spec.Output == nil || len(spec.OutputFields) == 0 {
		return nil, errors.New("table: a JoinSpec needs IsLeft, LeftKey, RightKey, Left, Right, Output and OutputFields")
	}
	return &JoinBolt[K, L, R]{spec: spec, end: endTracker{end: spec.End}}, nil
}

// Prepare implements api.Bolt.
func (b *JoinBolt[K, L, R]) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	b.end.prepare(ctx)
	// Outside effectively-once no InitState comes: the states are then
	// the task's own.
	return b.InitState(api.NewStates())
}

// InitState implements api.Stateful.
func (b *JoinBolt[K, L, R]) InitState(states *api.States) error {
	left, err := api.NewState[K, []L](states, LeftState)
	if err != nil {
		return fmt.Errorf("table join bolt: %w", err)
	}
	right, err := api.NewState[K, []R](states, RightState)
	if err != nil {
		return fmt.Errorf("table join bolt: %w", err)
	}
	if err := b.end.bind(states); err != nil {
		return fmt.Errorf("table join bolt: %w", err)
	}
	b.left, b.right = left, right
	return nil
}

// PreSave implements api.Stateful: everything is in the states already.
func (b *JoinBolt[K, L, R]) PreSave(int64) error { return nil }

// Execute implements api.Bolt.
func (b *JoinBolt[K, L, R]) Execute(t api.Tuple) {
	defer b.out.Ack(t)
	if t.IsTick() {
		return
	}
	if marker, complete := b.end.marker(t); marker {
		if complete {
			b.end.finish(b.out)
		}
		return
	}
	s := &b.spec
	if s.IsLeft(t) {
		if s.AcceptLeft != nil && !s.AcceptLeft(t) {
			return
		}
		k, l := s.LeftKey(t), s.Left(t)
		ls, _ := b.left.Get(k)
		b.left.Put(k, append(ls, l))
		rs, _ := b.right.Get(k)
		for i := range rs {
			if s.Where == nil || s.Where(&l, &rs[i]) {
				b.out.Emit(s.Output(&l, &rs[i]), t)
			}
		}
		return
	}
	if s.AcceptRight != nil && !s.AcceptRight(t) {
		return
	}
	k, r := s.RightKey(t), s.Right(t)
	rs, _ := b.right.Get(k)
	b.right.Put(k, append(rs, r))
	ls, _ := b.left.Get(k)
	for i := range ls {
		if s.Where == nil || s.Where(&ls[i], &r) {
			b.out.Emit(s.Output(&ls[i], &r), t)
		}
	}
}

// Cleanup implements api.Bolt.
func (b *JoinBolt[K, L, R]) Cleanup() {}

// DeclareOutputFields implements api.Bolt.
func (b *JoinBolt[K, L, R]) DeclareOutputFields(d api.OutputDeclarer) {
	d.Declare(b.spec.OutputFields...)
	b.end.declare(d)
}
