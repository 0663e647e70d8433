package table

import (
	"cmp"
	"slices"

	"github.com/egret-stream/egret/api/window"
)

// TopN keeps the n largest values of a group by less (ties keep the
// earlier value first); its result is them in descending order. A group's
// accumulator holds at most n values.
func TopN[T any](n int, less func(a, b T) bool) window.AggregateFunc[T, []T, []T] {
	return window.Funcs[T, []T, []T]{
		InitFn: func() []T { return nil },
		AddFn: func(acc []T, v T) []T {
			// acc is sorted descending; insert v after its equals.
			i := len(acc)
			for i > 0 && less(acc[i-1], v) {
				i--
			}
			if i >= n {
				return acc
			}
			acc = slices.Insert(acc, i, v)
			if len(acc) > n {
				acc = acc[:n]
			}
			return acc
		},
		MergeFn: func(a, b []T) []T {
			for _, v := range b {
				a = TopN(n, less).Add(a, v)
			}
			return a
		},
		ResultFn: func(acc []T) []T { return acc },
	}
}

// Latest keeps the value with the greatest order (deduplication keeping
// the newest row of each group: ROW_NUMBER() ... ORDER BY order DESC = 1);
// of equal orders the later one wins.
func Latest[T any, O cmp.Ordered](order func(T) O) window.AggregateFunc[T, *T, T] {
	return window.Funcs[T, *T, T]{
		InitFn: func() *T { return nil },
		AddFn: func(acc *T, v T) *T {
			if acc == nil || order(v) >= order(*acc) {
				return &v
			}
			return acc
		},
		MergeFn: func(a, b *T) *T {
			if a == nil || (b != nil && order(*b) >= order(*a)) {
				return b
			}
			return a
		},
		ResultFn: func(acc *T) T {
			if acc == nil {
				var zero T
				return zero
			}
			return *acc
		},
	}
}

// Distinct is a set of values, for count-distinct aggregates.
type Distinct[T comparable] map[T]struct{}

// Add adds v and reports whether it was new.
func (d Distinct[T]) Add(v T) bool {
	if _, ok := d[v]; ok {
		return false
	}
	d[v] = struct{}{}
	return true
}

// DistinctCount counts the distinct values of a group (COUNT(DISTINCT x)).
func DistinctCount[T comparable]() window.AggregateFunc[T, Distinct[T], int64] {
	return window.Funcs[T, Distinct[T], int64]{
		InitFn: func() Distinct[T] { return Distinct[T]{} },
		AddFn:  func(acc Distinct[T], v T) Distinct[T] { acc.Add(v); return acc },
		MergeFn: func(a, b Distinct[T]) Distinct[T] {
			for v := range b {
				a.Add(v)
			}
			return a
		},
		ResultFn: func(acc Distinct[T]) int64 { return int64(len(acc)) },
	}
}
