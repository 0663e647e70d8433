package table

import (
	"errors"

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
// arrives.
type JoinBolt[K comparable, L, R any] struct {
	spec  JoinSpec[K, L, R]
	out   api.BoltCollector
	left  map[K][]L
	right map[K][]R
	end   endTracker
}

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
	b.left, b.right = map[K][]L{}, map[K][]R{}
	b.end.prepare(ctx)
	return nil
}

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
		b.left[k] = append(b.left[k], l)
		for i := range b.right[k] {
			if s.Where == nil || s.Where(&l, &b.right[k][i]) {
				b.out.Emit(s.Output(&l, &b.right[k][i]), t)
			}
		}
		return
	}
	if s.AcceptRight != nil && !s.AcceptRight(t) {
		return
	}
	k, r := s.RightKey(t), s.Right(t)
	b.right[k] = append(b.right[k], r)
	for i := range b.left[k] {
		if s.Where == nil || s.Where(&b.left[k][i], &r) {
			b.out.Emit(s.Output(&b.left[k][i], &r), t)
		}
	}
}

// Cleanup implements api.Bolt.
func (b *JoinBolt[K, L, R]) Cleanup() {}

// NotCheckpointed implements api.NotCheckpointed: both sides' elements
// live in the task's memory.
func (b *JoinBolt[K, L, R]) NotCheckpointed() string {
	return "a table join bolt: its elements are not in checkpointed state"
}

// DeclareOutputFields implements api.Bolt.
func (b *JoinBolt[K, L, R]) DeclareOutputFields(d api.OutputDeclarer) {
	d.Declare(b.spec.OutputFields...)
	b.end.declare(d)
}
