package window

// AggregateFunc folds a window's elements incrementally: the window keeps
// one accumulator per key, never the elements. Add and Merge may modify
// and return their first argument. Merge combines the accumulators of
// two session windows an element bridges.
type AggregateFunc[IN, ACC, OUT any] interface {
	Init() ACC
	Add(acc ACC, in IN) ACC
	Merge(a, b ACC) ACC
	Result(acc ACC) OUT
}

// Funcs builds an AggregateFunc from four functions.
type Funcs[IN, ACC, OUT any] struct {
	InitFn   func() ACC
	AddFn    func(ACC, IN) ACC
	MergeFn  func(ACC, ACC) ACC
	ResultFn func(ACC) OUT
}

// Init implements AggregateFunc.
func (f Funcs[IN, ACC, OUT]) Init() ACC { return f.InitFn() }

// Add implements AggregateFunc.
func (f Funcs[IN, ACC, OUT]) Add(acc ACC, in IN) ACC { return f.AddFn(acc, in) }

// Merge implements AggregateFunc.
func (f Funcs[IN, ACC, OUT]) Merge(a, b ACC) ACC { return f.MergeFn(a, b) }

// Result implements AggregateFunc.
func (f Funcs[IN, ACC, OUT]) Result(acc ACC) OUT { return f.ResultFn(acc) }

// Number is a type Sum can add.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// Sum adds the elements.
func Sum[N Number]() AggregateFunc[N, N, N] {
	return Funcs[N, N, N]{
		InitFn:   func() N { return 0 },
		AddFn:    func(a N, v N) N { return a + v },
		MergeFn:  func(a, b N) N { return a + b },
		ResultFn: func(a N) N { return a },
	}
}

// Count counts the elements.
func Count[IN any]() AggregateFunc[IN, int64, int64] {
	return Funcs[IN, int64, int64]{
		InitFn:   func() int64 { return 0 },
		AddFn:    func(a int64, _ IN) int64 { return a + 1 },
		MergeFn:  func(a, b int64) int64 { return a + b },
		ResultFn: func(a int64) int64 { return a },
	}
}

// Reduced is the accumulator of Reduce: the value so far, if any.
type Reduced[T any] struct {
	Value T
	Set   bool
}

// Reduce combines the elements with an associative function; the result
// of an empty window is the zero T (windows are never empty when fired).
func Reduce[T any](fn func(a, b T) T) AggregateFunc[T, Reduced[T], T] {
	merge := func(a, b Reduced[T]) Reduced[T] {
		switch {
		case !a.Set:
			return b
		case !b.Set:
			return a
		}
		return Reduced[T]{Value: fn(a.Value, b.Value), Set: true}
	}
	return Funcs[T, Reduced[T], T]{
		InitFn:   func() Reduced[T] { return Reduced[T]{} },
		AddFn:    func(a Reduced[T], v T) Reduced[T] { return merge(a, Reduced[T]{Value: v, Set: true}) },
		MergeFn:  merge,
		ResultFn: func(a Reduced[T]) T { return a.Value },
	}
}

// Process is the opt-in full-window function: the window keeps every
// element (memory grows with the elements, not only with keys × windows)
// and fn sees them all, in arrival order, each time the window fires.
func Process[IN, OUT any](fn func(elems []IN) OUT) AggregateFunc[IN, []IN, OUT] {
	return Funcs[IN, []IN, OUT]{
		InitFn:   func() []IN { return nil },
		AddFn:    func(a []IN, v IN) []IN { return append(a, v) },
		MergeFn:  func(a, b []IN) []IN { return append(a, b...) },
		ResultFn: fn,
	}
}
