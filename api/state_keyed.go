package api

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/egret-stream/egret/core/statebackend"
)

// errNoBackend is returned when keyed state is bound in states that have
// no state backend.
var errNoBackend = errors.New("keyed state needs a state backend, and these states have operator state only (api.NewStates; the runtime's states, and api.OpenStates's, have one)")

// keyed is what every keyed state holds: its states, name and time to
// live. Keyed states are views: binding one again gives another view of
// the same entries.
type keyed struct {
	s       *States
	name    string
	ttl     time.Duration
	refresh bool
}

// bindKeyed checks and records the binding of a keyed state of descriptor
// desc ("value int64", "map string main.Item", ...).
func bindKeyed(s *States, name, desc string, c stateConfig) (keyed, error) {
	if err := checkName(name); err != nil {
		return keyed{}, err
	}
	switch {
	case s.b == nil:
		return keyed{}, fmt.Errorf("state %q: %w", name, errNoBackend)
	case c.modeSet:
		return keyed{}, fmt.Errorf("state %q: a restore mode is for operator state (keyed state moves with its key groups)", name)
	case c.ttl < 0:
		return keyed{}, fmt.Errorf("state %q: negative time to live %v", name, c.ttl)
	case c.refresh && c.ttl == 0:
		return keyed{}, fmt.Errorf("state %q: WithTTLRefreshOnRead without WithTTL", name)
	}
	if b, ok := s.bound[name]; ok {
		return keyed{}, fmt.Errorf("state %q: bound before as %s, now asked for as %s", name, b.desc(), desc)
	}
	if r, ok := s.raw[name]; ok {
		return keyed{}, fmt.Errorf("state %q: restored as %s, now asked for as %s", name, r.desc, desc)
	}
	if d, ok := s.keyed[name]; ok && d != desc {
		return keyed{}, fmt.Errorf("state %q: bound or restored as %s, now asked for as %s", name, d, desc)
	}
	s.keyed[name] = desc
	return keyed{s: s, name: name, ttl: c.ttl, refresh: c.refresh}, nil
}

// key returns the backend key of the current key's entry in this state,
// with suffix (a map key, encoded by enc) after it.
func (k *keyed) key(enc func([]byte) ([]byte, error)) (statebackend.Key, error) {
	s := k.s
	if !s.key.set {
		return statebackend.Key{}, fmt.Errorf("state %q: %w", k.name, errNoKey)
	}
	s.kbuf = s.keyPrefix(s.kbuf[:0])
	if enc != nil {
		var err error
		if s.kbuf, err = enc(s.kbuf); err != nil {
			return statebackend.Key{}, fmt.Errorf("state %q: encode key: %w", k.name, err)
		}
	}
	return statebackend.Key{Group: s.key.group, State: k.name, Key: s.kbuf}, nil
}

func (k *keyed) expiry() int64 {
	if k.ttl == 0 {
		return 0
	}
	return k.s.now().Add(k.ttl).UnixNano()
}

// get reads an entry into the states' value buffer (valid until the next
// read), renewing its time to live when the state says so.
func (k *keyed) get(bk statebackend.Key) ([]byte, bool, error) {
	v, ok, err := k.s.b.Get(bk, k.s.vbuf[:0])
	if err != nil {
		return nil, false, fmt.Errorf("state %q: %w", k.name, err)
	}
	if !ok {
		return nil, false, nil
	}
	k.s.vbuf = v
	if k.refresh {
		if err := k.s.b.Put(bk, v, k.expiry()); err != nil {
			return nil, false, fmt.Errorf("state %q: %w", k.name, err)
		}
	}
	return v, true, nil
}

func (k *keyed) put(bk statebackend.Key, val []byte) error {
	if err := k.s.b.Put(bk, val, k.expiry()); err != nil {
		return fmt.Errorf("state %q: %w", k.name, err)
	}
	return nil
}

// clear deletes the current key's entry.
func (k *keyed) clear() error {
	bk, err := k.key(nil)
	if err != nil {
		return err
	}
	if err := k.s.b.Delete(bk); err != nil {
		return fmt.Errorf("state %q: %w", k.name, err)
	}
	return nil
}

// ValueState is a keyed state holding one value per key.
type ValueState[V any] struct {
	keyed
	vs Serializer[V]
}

// NewValueState binds the keyed value state called name in s. Binding a
// name with another kind of state or other types (now or in the
// checkpoint restored) is an error. Options: WithTTL,
// WithTTLRefreshOnRead, WithSerializer.
func NewValueState[V any](s *States, name string, opts ...StateOption) (*ValueState[V], error) {
	c := configure(opts)
	vs, err := serializerOf[V](c.ser, "value")
	if err != nil {
		return nil, fmt.Errorf("state %q: %w", name, err)
	}
	k, err := bindKeyed(s, name, "value "+typeName[V](), c)
	if err != nil {
		return nil, err
	}
	return &ValueState[V]{keyed: k, vs: vs}, nil
}

// Value returns the current key's value and whether it has one.
func (v *ValueState[V]) Value() (V, bool, error) {
	var zero V
	bk, err := v.key(nil)
	if err != nil {
		return zero, false, err
	}
	b, ok, err := v.get(bk)
	if !ok || err != nil {
		return zero, false, err
	}
	x, err := v.vs.Decode(b)
	if err != nil {
		return zero, false, fmt.Errorf("state %q: decode value: %w", v.name, err)
	}
	return x, true, nil
}

// Update sets the current key's value.
func (v *ValueState[V]) Update(x V) error {
	bk, err := v.key(nil)
	if err != nil {
		return err
	}
	if v.s.ebuf, err = v.vs.Append(v.s.ebuf[:0], x); err != nil {
		return fmt.Errorf("state %q: encode value: %w", v.name, err)
	}
	return v.put(bk, v.s.ebuf)
}

// Clear removes the current key's value.
func (v *ValueState[V]) Clear() error { return v.clear() }

// MapState is a keyed state holding a map per key; every entry of the map
// is an entry of the backend (with its own time to live), so a map may
// outgrow memory on a backend on disk.
type MapState[K, V any] struct {
	keyed
	ks Serializer[K]
	vs Serializer[V]
}

// NewMapState binds the keyed map state called name in s. Options:
// WithTTL, WithTTLRefreshOnRead, WithSerializer (values),
// WithKeySerializer (keys; deterministic).
func NewMapState[K, V any](s *States, name string, opts ...StateOption) (*MapState[K, V], error) {
	c := configure(opts)
	ks, err := serializerOf[K](c.keySer, "key")
	if err != nil {
		return nil, fmt.Errorf("state %q: %w", name, err)
	}
	vs, err := serializerOf[V](c.ser, "value")
	if err != nil {
		return nil, fmt.Errorf("state %q: %w", name, err)
	}
	k, err := bindKeyed(s, name, "map "+typeName[K]()+" "+typeName[V](), c)
	if err != nil {
		return nil, err
	}
	return &MapState[K, V]{keyed: k, ks: ks, vs: vs}, nil
}

func (m *MapState[K, V]) mkey(k K) (statebackend.Key, error) {
	return m.key(func(dst []byte) ([]byte, error) { return m.ks.Append(dst, k) })
}

// Get returns the value of k in the current key's map and whether it is
// there.
func (m *MapState[K, V]) Get(k K) (V, bool, error) {
	var zero V
	bk, err := m.mkey(k)
	if err != nil {
		return zero, false, err
	}
	b, ok, err := m.get(bk)
	if !ok || err != nil {
		return zero, false, err
	}
	x, err := m.vs.Decode(b)
	if err != nil {
		return zero, false, fmt.Errorf("state %q: decode value: %w", m.name, err)
	}
	return x, true, nil
}

// Contains reports whether k is in the current key's map.
func (m *MapState[K, V]) Contains(k K) (bool, error) {
	bk, err := m.mkey(k)
	if err != nil {
		return false, err
	}
	_, ok, err := m.get(bk)
	return ok, err
}

// Put sets the value of k in the current key's map.
func (m *MapState[K, V]) Put(k K, v V) error {
	bk, err := m.mkey(k)
	if err != nil {
		return err
	}
	if m.s.ebuf, err = m.vs.Append(m.s.ebuf[:0], v); err != nil {
		return fmt.Errorf("state %q: encode value: %w", m.name, err)
	}
	return m.put(bk, m.s.ebuf)
}

// Delete removes k from the current key's map.
func (m *MapState[K, V]) Delete(k K) error {
	bk, err := m.mkey(k)
	if err != nil {
		return err
	}
	if err := m.s.b.Delete(bk); err != nil {
		return fmt.Errorf("state %q: %w", m.name, err)
	}
	return nil
}

// Range calls f with every key and value of the current key's map, in
// ascending order of the keys' encodings (for the default serializer of
// an unsigned integer or a string, ascending order), until f returns
// false. f must not change the states' keyed state (collect the keys,
// then change them).
func (m *MapState[K, V]) Range(f func(K, V) bool) error {
	bk, err := m.key(nil)
	if err != nil {
		return err
	}
	skip := len(bk.Key)
	var derr error
	err = m.s.b.Scan(bk.Group, m.name, bk.Key, func(key, val []byte) bool {
		k, err := m.ks.Decode(key[skip:])
		if err != nil {
			derr = fmt.Errorf("state %q: decode key: %w", m.name, err)
			return false
		}
		v, err := m.vs.Decode(val)
		if err != nil {
			derr = fmt.Errorf("state %q: decode value: %w", m.name, err)
			return false
		}
		return f(k, v)
	})
	if err != nil {
		return fmt.Errorf("state %q: %w", m.name, err)
	}
	return derr
}

// IsEmpty reports whether the current key's map has no entry.
func (m *MapState[K, V]) IsEmpty() (bool, error) {
	empty := true
	bk, err := m.key(nil)
	if err != nil {
		return false, err
	}
	if err := m.s.b.Scan(bk.Group, m.name, bk.Key, func(_, _ []byte) bool { empty = false; return false }); err != nil {
		return false, fmt.Errorf("state %q: %w", m.name, err)
	}
	return empty, nil
}

// Clear removes every entry of the current key's map.
func (m *MapState[K, V]) Clear() error {
	bk, err := m.key(nil)
	if err != nil {
		return err
	}
	var keys [][]byte
	if err := m.s.b.Scan(bk.Group, m.name, bk.Key, func(key, _ []byte) bool {
		keys = append(keys, append([]byte(nil), key...))
		return true
	}); err != nil {
		return fmt.Errorf("state %q: %w", m.name, err)
	}
	for _, k := range keys {
		if err := m.s.b.Delete(statebackend.Key{Group: bk.Group, State: m.name, Key: k}); err != nil {
			return fmt.Errorf("state %q: %w", m.name, err)
		}
	}
	return nil
}

// ListState is a keyed state holding a list per key (one backend entry per
// key: the list is read and written whole).
type ListState[V any] struct {
	keyed
	vs Serializer[V]
}

// NewListState binds the keyed list state called name in s. Options:
// WithTTL, WithTTLRefreshOnRead, WithSerializer (elements).
func NewListState[V any](s *States, name string, opts ...StateOption) (*ListState[V], error) {
	c := configure(opts)
	vs, err := serializerOf[V](c.ser, "element")
	if err != nil {
		return nil, fmt.Errorf("state %q: %w", name, err)
	}
	k, err := bindKeyed(s, name, "list "+typeName[V](), c)
	if err != nil {
		return nil, err
	}
	return &ListState[V]{keyed: k, vs: vs}, nil
}

// Get returns the current key's list (nil when empty).
func (l *ListState[V]) Get() ([]V, error) {
	bk, err := l.key(nil)
	if err != nil {
		return nil, err
	}
	b, ok, err := l.get(bk)
	if !ok || err != nil {
		return nil, err
	}
	var out []V
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, fmt.Errorf("state %q: damaged list", l.name)
		}
		x, err := l.vs.Decode(b[k : k+int(n)])
		if err != nil {
			return nil, fmt.Errorf("state %q: decode element: %w", l.name, err)
		}
		out = append(out, x)
		b = b[k+int(n):]
	}
	return out, nil
}

// Add appends v to the current key's list.
func (l *ListState[V]) Add(v V) error { return l.AddAll([]V{v}) }

// AddAll appends vs to the current key's list.
func (l *ListState[V]) AddAll(vs []V) error {
	bk, err := l.key(nil)
	if err != nil {
		return err
	}
	b, _, err := l.get(bk)
	if err != nil {
		return err
	}
	l.s.ebuf = append(l.s.ebuf[:0], b...)
	return l.write(bk, vs)
}

// Update replaces the current key's list with vs (an empty vs clears it).
func (l *ListState[V]) Update(vs []V) error {
	if len(vs) == 0 {
		return l.clear()
	}
	bk, err := l.key(nil)
	if err != nil {
		return err
	}
	l.s.ebuf = l.s.ebuf[:0]
	return l.write(bk, vs)
}

// write appends vs to the encoded list in the states' encode buffer and
// stores it.
func (l *ListState[V]) write(bk statebackend.Key, vs []V) error {
	var tmp []byte
	for _, v := range vs {
		var err error
		if tmp, err = l.vs.Append(tmp[:0], v); err != nil {
			return fmt.Errorf("state %q: encode element: %w", l.name, err)
		}
		l.s.ebuf = appendBytes(l.s.ebuf, tmp)
	}
	return l.put(bk, l.s.ebuf)
}

// Clear empties the current key's list.
func (l *ListState[V]) Clear() error { return l.clear() }

// Aggregator folds inputs into an accumulator and reads a result from
// it (api/window's AggregateFunc is one).
type Aggregator[IN, ACC, OUT any] interface {
	Init() ACC
	Add(acc ACC, in IN) ACC
	Merge(a, b ACC) ACC
	Result(acc ACC) OUT
}

// AggregatingState is a keyed state holding an accumulator per key.
type AggregatingState[IN, ACC, OUT any] struct {
	keyed
	agg Aggregator[IN, ACC, OUT]
	vs  Serializer[ACC]
}

// NewAggregatingState binds the keyed aggregating state called name in s,
// folding with agg. Options: WithTTL, WithTTLRefreshOnRead, WithSerializer
// (the accumulator).
func NewAggregatingState[IN, ACC, OUT any](s *States, name string, agg Aggregator[IN, ACC, OUT], opts ...StateOption) (*AggregatingState[IN, ACC, OUT], error) {
	if agg == nil {
		return nil, fmt.Errorf("state %q: no aggregator", name)
	}
	c := configure(opts)
	vs, err := serializerOf[ACC](c.ser, "accumulator")
	if err != nil {
		return nil, fmt.Errorf("state %q: %w", name, err)
	}
	k, err := bindKeyed(s, name, "aggregating "+typeName[IN]()+" "+typeName[ACC]()+" "+typeName[OUT](), c)
	if err != nil {
		return nil, err
	}
	return &AggregatingState[IN, ACC, OUT]{keyed: k, agg: agg, vs: vs}, nil
}

// Accumulator returns the current key's accumulator and whether it has
// one.
func (a *AggregatingState[IN, ACC, OUT]) Accumulator() (ACC, bool, error) {
	var zero ACC
	bk, err := a.key(nil)
	if err != nil {
		return zero, false, err
	}
	b, ok, err := a.get(bk)
	if !ok || err != nil {
		return zero, false, err
	}
	acc, err := a.vs.Decode(b)
	if err != nil {
		return zero, false, fmt.Errorf("state %q: decode accumulator: %w", a.name, err)
	}
	return acc, true, nil
}

// Get returns the result of the current key's accumulator and whether it
// has one.
func (a *AggregatingState[IN, ACC, OUT]) Get() (OUT, bool, error) {
	var zero OUT
	acc, ok, err := a.Accumulator()
	if !ok || err != nil {
		return zero, false, err
	}
	return a.agg.Result(acc), true, nil
}

// Add folds in into the current key's accumulator (started with Init).
func (a *AggregatingState[IN, ACC, OUT]) Add(in IN) error {
	acc, ok, err := a.Accumulator()
	if err != nil {
		return err
	}
	if !ok {
		acc = a.agg.Init()
	}
	return a.store(a.agg.Add(acc, in))
}

// MergeAccumulator merges acc into the current key's accumulator (for
// merging windows), or sets it when there is none.
func (a *AggregatingState[IN, ACC, OUT]) MergeAccumulator(acc ACC) error {
	cur, ok, err := a.Accumulator()
	if err != nil {
		return err
	}
	if ok {
		acc = a.agg.Merge(cur, acc)
	}
	return a.store(acc)
}

func (a *AggregatingState[IN, ACC, OUT]) store(acc ACC) error {
	bk, err := a.key(nil)
	if err != nil {
		return err
	}
	if a.s.ebuf, err = a.vs.Append(a.s.ebuf[:0], acc); err != nil {
		return fmt.Errorf("state %q: encode accumulator: %w", a.name, err)
	}
	return a.put(bk, a.s.ebuf)
}

// Clear removes the current key's accumulator.
func (a *AggregatingState[IN, ACC, OUT]) Clear() error { return a.clear() }

// ReducingState is a keyed state holding a value per key that Add
// combines with a reduce function.
type ReducingState[V any] struct {
	agg *AggregatingState[V, V, V]
}

// reducer is the Aggregator of a reduce function.
type reducer[V any] func(a, b V) V

func (r reducer[V]) Init() (zero V)    { return zero }
func (r reducer[V]) Add(acc V, in V) V { return r(acc, in) }
func (r reducer[V]) Merge(a, b V) V    { return r(a, b) }
func (r reducer[V]) Result(acc V) V    { return acc }

// NewReducingState binds the keyed reducing state called name in s: Add
// stores its value for a key without one, else reduce(current, value).
// Options: WithTTL, WithTTLRefreshOnRead, WithSerializer.
func NewReducingState[V any](s *States, name string, reduce func(a, b V) V, opts ...StateOption) (*ReducingState[V], error) {
	if reduce == nil {
		return nil, fmt.Errorf("state %q: no reduce function", name)
	}
	c := configure(opts)
	vs, err := serializerOf[V](c.ser, "value")
	if err != nil {
		return nil, fmt.Errorf("state %q: %w", name, err)
	}
	k, err := bindKeyed(s, name, "reducing "+typeName[V](), c)
	if err != nil {
		return nil, err
	}
	return &ReducingState[V]{agg: &AggregatingState[V, V, V]{keyed: k, agg: reducer[V](reduce), vs: vs}}, nil
}

// Get returns the current key's value and whether it has one.
func (r *ReducingState[V]) Get() (V, bool, error) { return r.agg.Accumulator() }

// Add reduces v into the current key's value.
func (r *ReducingState[V]) Add(v V) error { return r.agg.MergeAccumulator(v) }

// Clear removes the current key's value.
func (r *ReducingState[V]) Clear() error { return r.agg.Clear() }
