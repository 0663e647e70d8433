package instance

import (
	"fmt"
	"hash/maphash"
	"slices"
	"sync/atomic"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/tuple"
	"github.com/egret-stream/egret/daemons/wire"
)

// inTuple is a received tuple with its acking identity.
//
// Its values stay encoded (a private copy of their bytes, validated on
// receipt) and are read on demand: the typed accessors (Int64, Float64,
// String, ...) read them in place without allocating, and Value or Values
// decode all of them once. Strings are turned into Go strings on receipt,
// through the instance's intern table, so String is free and a string kept
// by the bolt holds no batch memory. Tuples whose values include lists,
// maps or user types are decoded on receipt instead.
//
// A tuple never changes after Execute sees it, except for the one-time
// decoding of its values (published atomically, so a tuple kept and read
// by other goroutines is safe) and its acking state, which only the bolt's
// goroutine touches; a bolt may keep a tuple as long as it likes, unless it
// reuses tuples (api.TupleReuser): then the arena hands out one inTuple,
// refilled for every record, whose encoded values alias the batch.
type inTuple struct {
	src *streamSource
	// enc holds the encoded values (with their count); nil when the
	// tuple was decoded on receipt.
	enc []byte
	// strs[i] is value i when it is a string (nil without strings).
	strs []string
	// vals holds the decoded values once decoded.
	vals atomic.Pointer[[]any]
	// ack is the acking state of a tracked tuple (nil if untracked).
	ack  *inAck
	task int32
}

// streamSource is what the tuples of one stream share.
type streamSource struct {
	info *wire.StreamInfo
	reg  *tuple.Registry
}

// inAck is the acking state of a received tuple. The common single root
// is stored inline, so that filling it in writes no pointers.
type inAck struct {
	edge  uint64
	root1 [1]wire.Root
	// xor1 and many.xors[i] accumulate the edge ids of the tuples
	// emitted anchored on this tuple for its roots (at-least-once mode).
	xor1 [1]uint64
	// many holds two or more roots (nil for one): the common case keeps
	// the state at 48 bytes.
	many *manyRoots
	// done is set once the tuple is acked or failed.
	done bool
}

// manyRoots are the roots of a tuple anchored on two or more.
type manyRoots struct {
	roots []wire.Root
	xors  []uint64
}

// roots returns the tuple's roots.
func (k *inAck) roots() []wire.Root {
	if k.many != nil {
		return k.many.roots
	}
	return k.root1[:]
}

// xors returns the XOR accumulators, one per root.
func (k *inAck) xors() []uint64 {
	if k.many != nil {
		return k.many.xors
	}
	return k.xor1[:]
}

var _ api.Tuple = (*inTuple)(nil)

// Arena chunk sizes. Received tuples are carved out of shared chunks of
// 2 to 3 KiB, so a batch costs a few allocations instead of several per
// tuple; a tuple the bolt keeps keeps its chunks alive (about 8 KiB).
const (
	tupleChunk = 32
	ackChunk   = 32
	byteChunk  = 2 << 10
	sliceChunk = 128
	// bigTuple is the size from which a tuple's bytes get their own
	// allocation.
	bigTuple = 256
)

// Intern table of short strings: repeated values (words, keys, constants)
// are shared instead of allocated per tuple.
const (
	internSlots  = 1 << 12
	internMaxLen = 64
)

// arena allocates received tuples. It is used by the bolt's goroutine only.
type arena struct {
	tuples  []inTuple
	acks    []inAck
	bytes   []byte
	strs    []string
	roots   []wire.Root
	xors    []uint64
	sources []streamSource // by stream index
	seed    maphash.Seed
	intern  *[internSlots]string
	// last[i] is the last string received as value i, checked before
	// the intern table: a field often repeats its previous value.
	last [4]string
	// reuse is set for a bolt that keeps no tuple past Execute
	// (api.TupleReuser): every tuple is one, its values alias the batch.
	reuse   bool
	one     inTuple
	oneAck  inAck
	oneStrs []string
}

func newArena(streams *wire.StreamTable, reg *tuple.Registry) *arena {
	a := &arena{seed: maphash.MakeSeed(), intern: new([internSlots]string)}
	for i := uint32(0); ; i++ {
		info, err := streams.Stream(i)
		if err != nil {
			break
		}
		a.sources = append(a.sources, streamSource{info: info, reg: reg})
	}
	return a
}

func (a *arena) newTuple() *inTuple {
	if a.reuse {
		t := &a.one
		t.src, t.enc, t.strs, t.ack, t.task = nil, nil, nil, nil, 0
		if t.vals.Load() != nil { // a load is a plain read; a store is a full barrier
			t.vals.Store(nil)
		}
		return t
	}
	if len(a.tuples) == 0 {
		a.tuples = make([]inTuple, tupleChunk)
	}
	t := &a.tuples[0]
	a.tuples = a.tuples[1:]
	return t
}

func (a *arena) newAck() *inAck {
	if a.reuse {
		a.oneAck = inAck{}
		return &a.oneAck
	}
	if len(a.acks) == 0 {
		a.acks = make([]inAck, ackChunk)
	}
	k := &a.acks[0]
	a.acks = a.acks[1:]
	return k
}

// take returns n elements of *chunk with their capacity capped at n, so
// that an append by the bolt cannot reach another tuple's elements.
func take[T any](chunk *[]T, n int) []T {
	if len(*chunk) < n {
		if n > sliceChunk/4 {
			return make([]T, n)
		}
		*chunk = make([]T, sliceChunk)
	}
	s := (*chunk)[:n:n]
	*chunk = (*chunk)[n:]
	return s
}

// newStrings returns the strings of a tuple's n values.
func (a *arena) newStrings(n int) []string {
	if !a.reuse {
		return take(&a.strs, n)
	}
	if cap(a.oneStrs) < n {
		// Written for every tuple: cache lines of its own.
		a.oneStrs = slices.Grow(wire.CacheLineSlice[string](), n)
	}
	return a.oneStrs[:n:n]
}

// copyBytes returns a tuple's copy of its encoded values b (b itself when
// tuples are reused: the batch outlives the tuple).
func (a *arena) copyBytes(b []byte) []byte {
	if a.reuse {
		return b
	}
	if len(b) >= bigTuple {
		return append([]byte(nil), b...)
	}
	if len(a.bytes) < len(b) {
		a.bytes = make([]byte, byteChunk)
	}
	s := a.bytes[:len(b):len(b)]
	copy(s, b)
	a.bytes = a.bytes[len(b):]
	return s
}

// string returns b as a string, shared with earlier equal strings when it
// is short.
func (a *arena) string(b []byte) string {
	if len(b) > internMaxLen || len(b) == 0 {
		return string(b)
	}
	slot := &a.intern[maphash.Bytes(a.seed, b)&(internSlots-1)]
	if *slot != string(b) {
		*slot = string(b)
	}
	return *slot
}

// decode reads the next record of rd into a tuple.
func (in *Instance) decode(rd *wire.RecordReader, h *wire.Header, a *arena) (*inTuple, error) {
	vals, err := rd.Next(h)
	if err != nil {
		return nil, err
	}
	if int(h.Stream) >= len(a.sources) {
		_, err := in.cfg.Streams.Stream(h.Stream)
		return nil, err
	}
	src := &a.sources[h.Stream]
	var r tuple.Reader
	r.Reset(vals)
	n, err := r.Count()
	if err != nil {
		return nil, src.corrupt(h, err)
	}
	var strs []string
	for i := range n {
		k, s, err := r.SkipScalar()
		if err != nil {
			return nil, src.corrupt(h, fmt.Errorf("tuple: value %d: %w", i, err))
		}
		switch k {
		case tuple.KindList, tuple.KindMap, tuple.KindUser:
			return in.decodeNow(a, src, vals, h)
		case tuple.KindString:
			if strs == nil {
				strs = a.newStrings(n)
			}
			if i < len(a.last) {
				if a.last[i] != string(s) {
					a.last[i] = a.string(s)
				}
				strs[i] = a.last[i]
			} else {
				strs[i] = a.string(s)
			}
		}
	}
	if !r.Done() {
		return nil, src.corrupt(h, fmt.Errorf("tuple: %d trailing bytes after %d values: %w", r.Remaining(), n, tuple.ErrCorrupt))
	}
	t := a.newTuple()
	t.src, t.task, t.enc, t.strs = src, int32(h.SrcTask), a.copyBytes(vals), strs
	a.track(t, h)
	return t, nil
}

func (s *streamSource) corrupt(h *wire.Header, err error) error {
	return fmt.Errorf("stream %s/%s from task %d: %w", s.info.Component, s.info.ID, h.SrcTask, err)
}

// track copies the acking identity of a tracked tuple.
func (a *arena) track(t *inTuple, h *wire.Header) {
	if len(h.Roots) == 0 {
		return
	}
	k := a.newAck()
	k.edge = h.Edge
	if len(h.Roots) == 1 {
		k.root1[0] = h.Roots[0]
	} else {
		k.many = &manyRoots{roots: take(&a.roots, len(h.Roots)), xors: take(&a.xors, len(h.Roots))}
		copy(k.many.roots, h.Roots)
	}
	t.ack = k
}

// decodeNow decodes a tuple's values on receipt (lists, maps and user
// types: a codec's error is reported now, not when the bolt reads it).
func (in *Instance) decodeNow(a *arena, src *streamSource, vals []byte, h *wire.Header) (*inTuple, error) {
	values, err := tuple.DecodeValues(vals, nil, src.reg)
	if err != nil {
		return nil, src.corrupt(h, err)
	}
	t := a.newTuple()
	t.src, t.task = src, int32(h.SrcTask)
	t.vals.Store(&values)
	a.track(t, h)
	return t, nil
}

// lazy reports whether the values are held encoded.
func (t *inTuple) lazy() bool { return t.enc != nil }

// values decodes all values once. Concurrent callers may both decode; one
// result is kept and returned to both.
func (t *inTuple) values() []any {
	if p := t.vals.Load(); p != nil {
		return *p
	}
	var r tuple.Reader
	r.Reset(t.enc)
	n, _ := r.Count()
	var vals []any
	if n > 0 {
		vals = make([]any, n)
	}
	for i := range vals {
		if t.strs != nil && r.Kind() == tuple.KindString {
			vals[i] = t.strs[i]
			_ = r.Skip()
			continue
		}
		// Validated on receipt, and without user types: cannot fail.
		vals[i], _ = r.Value(t.src.reg)
	}
	if t.vals.CompareAndSwap(nil, &vals) {
		return vals
	}
	return *t.vals.Load()
}

// reader returns a Reader positioned on value i, or false when the values
// are not held encoded or i is out of range.
func (t *inTuple) reader(i int) (tuple.Reader, bool) {
	var r tuple.Reader
	if !t.lazy() || i < 0 {
		return r, false
	}
	r.Reset(t.enc)
	n, _ := r.Count()
	if i >= n {
		return r, false
	}
	for range i {
		_ = r.Skip()
	}
	return r, true
}

// Len implements api.Tuple.
func (t *inTuple) Len() int {
	if !t.lazy() {
		return len(t.values())
	}
	var r tuple.Reader
	r.Reset(t.enc)
	n, _ := r.Count()
	return n
}

// oneValueMax bounds the index that Value decodes alone: reaching value i
// skips the i before it, so reading every field of a wide tuple through
// Value decodes them all once instead.
const oneValueMax = 8

// Value implements api.Tuple. A tuple whose values are still encoded
// decodes a scalar or string value i < oneValueMax alone: a bolt that
// reads one field through Value (a pass-through timestamp, say) does not
// pay for decoding the others. A []byte is taken from the decoded values,
// so that Value and Bytes return the same slice.
func (t *inTuple) Value(i int) any {
	if i >= oneValueMax || t.vals.Load() != nil {
		return t.decoded(i)
	}
	if r, ok := t.reader(i); ok && r.Kind() != tuple.KindBytes {
		if r.Kind() == tuple.KindString {
			return t.strs[i]
		}
		// Validated on receipt, and without user types: cannot fail.
		v, _ := r.Value(t.src.reg)
		return v
	}
	return t.decoded(i)
}

// decoded returns value i of the decoded values (nil out of range).
func (t *inTuple) decoded(i int) any {
	if v := t.values(); i >= 0 && i < len(v) {
		return v[i]
	}
	return nil
}

// Values implements api.Tuple.
func (t *inTuple) Values() []any { return t.values() }

// Fields implements api.Tuple.
func (t *inTuple) Fields() []string { return t.src.info.Fields }

// FieldIndex implements api.Tuple.
func (t *inTuple) FieldIndex(name string) int {
	for i, f := range t.src.info.Fields {
		if f == name {
			return i
		}
	}
	return -1
}

// ValueByField implements api.Tuple.
func (t *inTuple) ValueByField(name string) any { return t.Value(t.FieldIndex(name)) }

// String implements api.Tuple.
func (t *inTuple) String(i int) string {
	r, ok := t.reader(i)
	if !ok {
		b := t.basic()
		return b.String(i)
	}
	switch r.Kind() {
	case tuple.KindString:
		return t.strs[i]
	case tuple.KindBytes:
		b, _ := r.StringBytes()
		return string(b)
	}
	return ""
}

// Int64 implements api.Tuple.
func (t *inTuple) Int64(i int) int64 {
	r, ok := t.reader(i)
	if !ok {
		b := t.basic()
		return b.Int64(i)
	}
	switch k := r.Kind(); {
	case k.IsSigned():
		v, _ := r.Int()
		return v
	case k.IsUnsigned():
		v, _ := r.Uint()
		return int64(v)
	case k == tuple.KindDuration:
		v, _ := r.Duration()
		return int64(v)
	}
	return 0
}

// Uint64 implements api.Tuple.
func (t *inTuple) Uint64(i int) uint64 {
	r, ok := t.reader(i)
	if !ok {
		b := t.basic()
		return b.Uint64(i)
	}
	if r.Kind() == tuple.KindUint64 {
		v, _ := r.Uint()
		return v
	}
	return uint64(t.Int64(i))
}

// Float64 implements api.Tuple.
func (t *inTuple) Float64(i int) float64 {
	r, ok := t.reader(i)
	if !ok {
		b := t.basic()
		return b.Float64(i)
	}
	switch r.Kind() {
	case tuple.KindFloat32, tuple.KindFloat64:
		v, _ := r.Float()
		return v
	}
	return float64(t.Int64(i))
}

// Bool implements api.Tuple.
func (t *inTuple) Bool(i int) bool {
	r, ok := t.reader(i)
	if !ok {
		b := t.basic()
		return b.Bool(i)
	}
	v, _ := r.Bool()
	return v
}

// Bytes implements api.Tuple.
func (t *inTuple) Bytes(i int) []byte {
	r, ok := t.reader(i)
	if !ok {
		b := t.basic()
		return b.Bytes(i)
	}
	switch r.Kind() {
	case tuple.KindString:
		return []byte(t.strs[i])
	case tuple.KindBytes:
		// The same slice as Value(i), as for an api.BasicTuple.
		v, _ := t.values()[i].([]byte)
		return v
	}
	return nil
}

// Time implements api.Tuple.
func (t *inTuple) Time(i int) time.Time {
	r, ok := t.reader(i)
	if !ok {
		b := t.basic()
		return b.Time(i)
	}
	v, _ := r.Time()
	return v
}

// SourceComponent implements api.Tuple.
func (t *inTuple) SourceComponent() string { return t.src.info.Component }

// SourceStream implements api.Tuple.
func (t *inTuple) SourceStream() string { return t.src.info.ID }

// SourceTask implements api.Tuple.
func (t *inTuple) SourceTask() int { return int(t.task) }

// IsTick implements api.Tuple.
func (t *inTuple) IsTick() bool {
	return t.src.info.Component == api.SystemComponent && t.src.info.ID == api.TickStream
}

// basic returns the tuple as an api.BasicTuple (with decoded values), the
// reference of the accessors' conversions.
func (t *inTuple) basic() api.BasicTuple {
	return api.BasicTuple{Component: t.src.info.Component, Stream: t.src.info.ID, Task: int(t.task), FieldNames: t.src.info.Fields, Vals: t.values()}
}

// GoString shows the tuple in test failures.
func (t *inTuple) GoString() string {
	b := t.basic()
	return b.GoString()
}
