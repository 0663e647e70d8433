package api

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/core/tuple"
)

// Stateful is implemented by a spout or bolt that keeps state in States:
// keyed state (NewValueState, NewMapState, NewListState,
// NewReducingState, NewAggregatingState), scoped to the key of the tuple
// being processed and held in the topology's state backend
// (topology.state.backend), and operator state (NewState), a map per task.
// In effectively-once mode (topology.reliability.mode effectively-once)
// the runtime checkpoints both; in the other modes they live as long as
// the task.
//
// InitState is called on the task's goroutine after Open or Prepare and
// before the first NextTuple or Execute, with the states of the last
// complete checkpoint (empty ones at the first start, and always in the
// modes that do not checkpoint). After a rollback (any process of the
// topology died) it is called again with the states of the checkpoint
// rolled back to: the component must then forget what it holds outside
// its states (a spout rewinds to the positions its states hold). A
// component binds its states on every call.
//
// PreSave is called on the task's goroutine right before the task's states
// are saved as part of checkpoint id: the last moment to move anything held
// outside the states into them. An error aborts this checkpoint (the
// topology keeps running; the next checkpoint tries again).
type Stateful interface {
	InitState(states *States) error
	PreSave(checkpoint int64) error
}

// CheckpointListener is implemented by a component that acts when a
// checkpoint is complete, that is, saved by every task of the topology: a
// two-phase-commit sink commits there what it prepared in PreSave. It runs
// on the task's goroutine. It may be called more than once for one id
// (after a rollback to that checkpoint it is called again for it), so it
// must be idempotent.
type CheckpointListener interface {
	CheckpointComplete(checkpoint int64)
}

// NotCheckpointed is implemented by a component that holds state the
// runtime cannot checkpoint, such as a shell component's subprocess or a
// window engine whose open windows live outside the checkpointed states.
// NotCheckpointed returns why, in one phrase ("" when it can be
// checkpointed after all). TopologyBuilder.Build asks the instance it
// creates and records the answer in the definition
// (topology.KeyNotCheckpointed); egret submit then refuses the topology
// in effectively-once mode, naming the component, unless its declarer's
// SetStateless says it keeps no state.
//
// Nothing can tell whether a user component keeps state outside the
// States it binds (a field counting tuples, a file, a database): under
// effectively-once every such component must either keep its state in
// States, declare NotCheckpointed, or be stateless.
type NotCheckpointed interface {
	NotCheckpointed() string
}

// States is the state of one task: its operator states (NewState) and its
// keyed states, with the current key they are scoped to and the task's
// timers. It is used from the task's goroutine only. The runtime encodes
// every operator state bound with NewState when the task saves, and keeps
// the operator states it restored that nothing bound, so a state is never
// lost by not being read.
type States struct {
	raw   map[string]opRaw   // operator states restored and not bound yet
	bound map[string]opState // operator states bound
	// keyed: the descriptors of the keyed states bound or restored
	// (their kind and types), checked when a state is bound.
	keyed map[string]string
	b     statebackend.Backend // nil: no keyed state
	opt   statebackend.Options
	now   func() time.Time
	reg   *tuple.Registry
	key   currentKey
	tm    timers
	kbuf  []byte // stored user key being built
	vbuf  []byte // value read
	ebuf  []byte // value being encoded
}

// NewStates returns an empty set of states with operator state only:
// binding a keyed state in it is an error. The runtime builds a task's
// states with OpenStates.
func NewStates() *States {
	return &States{raw: map[string]opRaw{}, bound: map[string]opState{}, keyed: map[string]string{}}
}

// HasKeyedState reports whether s has a state backend, so that keyed
// state and timers can be bound in it (OpenStates), not operator state
// only (NewStates, UnmarshalStates).
func (s *States) HasKeyedState() bool { return s.b != nil }

// OpenStates returns the states of a task whose keyed state lives in b,
// opened with o (the task's key groups; o.Now is the clock of time-to-live
// and processing time), restored from operator (the bytes MarshalBinary
// wrote; nil for none) and the timers b holds. reg resolves the user
// types of key values (nil: none). It is what the runtime calls after
// restoring b; a test of a component opens a backend
// (statebackends/heap) and calls it the same way.
func OpenStates(b statebackend.Backend, o statebackend.Options, reg *tuple.Registry, operator []byte) (*States, error) {
	s, err := UnmarshalStates(operator)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, errors.New("states: no state backend")
	}
	if o.MaxParallelism < 1 || o.MaxParallelism > keygroup.Limit || o.Groups.Len() < 1 || o.Groups.Start < 0 || o.Groups.End > o.MaxParallelism {
		return nil, fmt.Errorf("states: key groups %v are not a non-empty range of [0, %d)", o.Groups, o.MaxParallelism)
	}
	s.b, s.opt, s.now, s.reg = b, o, o.Clock(), reg
	if err := s.tm.load(s); err != nil {
		return nil, err
	}
	return s, nil
}

// StateOption configures a state when it is bound.
type StateOption interface{ apply(*stateConfig) }

type stateConfig struct {
	ttl     time.Duration
	refresh bool
	mode    RestoreMode
	modeSet bool
	ser     any // Serializer[V]
	keySer  any // Serializer[K]
}

type optionFunc func(*stateConfig)

func (f optionFunc) apply(c *stateConfig) { f(c) }

// WithTTL gives the entries of a keyed state a time to live: an entry
// (a value, a list, one key of a map state) written more than d ago (by
// the task's processing-time clock) is gone, as if deleted. Writing an
// entry renews its time. Operator state takes no time to live.
func WithTTL(d time.Duration) StateOption {
	return optionFunc(func(c *stateConfig) { c.ttl = d })
}

// WithTTLRefreshOnRead makes reading an entry of a state with a time to
// live renew its time too (a write per read).
func WithTTLRefreshOnRead() StateOption {
	return optionFunc(func(c *stateConfig) { c.refresh = true })
}

// WithSerializer sets the serializer of a state's values (of a map
// state's values, a list state's elements, an aggregating state's
// accumulator); DefaultSerializer otherwise. Its type must be the state's.
func WithSerializer[T any](s Serializer[T]) StateOption {
	return optionFunc(func(c *stateConfig) { c.ser = s })
}

// WithKeySerializer sets the serializer of a map state's keys (also of an
// operator state's); DefaultSerializer otherwise. It must be
// deterministic.
func WithKeySerializer[T any](s Serializer[T]) StateOption {
	return optionFunc(func(c *stateConfig) { c.keySer = s })
}

// RestoreMode says how an operator state is given to the tasks of a
// component whose parallelism changed since the checkpoint
// (RedistributeStates).
type RestoreMode uint8

const (
	// SplitRestore spreads the entries of every old task's state over
	// the new tasks: each entry goes to exactly one task.
	SplitRestore RestoreMode = iota
	// UnionRestore gives every new task the union of the old tasks'
	// states; each task keeps what is its own (a Kafka spout keeps the
	// positions of the partitions it is assigned).
	UnionRestore
)

func (m RestoreMode) String() string {
	switch m {
	case SplitRestore:
		return "split"
	case UnionRestore:
		return "union"
	}
	return fmt.Sprintf("RestoreMode(%d)", uint8(m))
}

// WithRestoreMode sets how an operator state is restored after a change of
// parallelism (SplitRestore unless set). Keyed state takes no restore
// mode: it moves with its key groups.
func WithRestoreMode(m RestoreMode) StateOption {
	return optionFunc(func(c *stateConfig) { c.mode, c.modeSet = m, true })
}

func configure(opts []StateOption) stateConfig {
	var c stateConfig
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// serializerOf returns the serializer set for a state's values or keys
// (given), or T's default.
func serializerOf[T any](given any, what string) (Serializer[T], error) {
	if given == nil {
		given = DefaultSerializer[T]()
	}
	s, ok := given.(Serializer[T])
	if !ok {
		return nil, fmt.Errorf("the %s serializer is a %T, not a Serializer[%s]", what, given, typeName[T]())
	}
	if c, ok := s.(interface{ check() error }); ok {
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return s, nil
}

// opRaw is an operator state restored and not bound: its descriptor,
// restore mode and encoded entries.
type opRaw struct {
	desc string
	mode RestoreMode
	data []byte
}

type opState interface {
	desc() string
	restoreMode() RestoreMode
	encode(dst []byte) ([]byte, error)
}

// State is an operator state: a typed map of one task, not scoped to a
// key (for example a source's positions). It is used from the task's
// goroutine only. K and V are encoded with their serializers
// (DefaultSerializer unless set) when the task saves.
type State[K comparable, V any] struct {
	m    map[K]V
	ks   Serializer[K]
	vs   Serializer[V]
	mode RestoreMode
}

// NewState binds the operator state called name in s, holding its restored
// contents. Binding a name again returns the same state; binding it with
// other types, or restored bytes saved with other types or that do not
// decode, is an error. Options: WithRestoreMode, WithSerializer,
// WithKeySerializer.
func NewState[K comparable, V any](s *States, name string, opts ...StateOption) (*State[K, V], error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	c := configure(opts)
	desc := "operator " + typeName[K]() + " " + typeName[V]()
	if b, ok := s.bound[name]; ok {
		st, ok := b.(*State[K, V])
		if !ok {
			return nil, fmt.Errorf("state %q: bound before as %s, now asked for as %s", name, b.desc(), desc)
		}
		return st, nil
	}
	if _, ok := s.keyed[name]; ok {
		return nil, fmt.Errorf("state %q: bound before as %s, now asked for as %s", name, s.keyed[name], desc)
	}
	if c.ttl != 0 || c.refresh {
		return nil, fmt.Errorf("state %q: operator state takes no time to live (WithTTL is for keyed state)", name)
	}
	ks, err := serializerOf[K](c.keySer, "key")
	if err != nil {
		return nil, fmt.Errorf("state %q: %w", name, err)
	}
	vs, err := serializerOf[V](c.ser, "value")
	if err != nil {
		return nil, fmt.Errorf("state %q: %w", name, err)
	}
	st := &State[K, V]{m: map[K]V{}, ks: ks, vs: vs, mode: c.mode}
	if r, ok := s.raw[name]; ok {
		if r.desc != desc {
			return nil, fmt.Errorf("state %q: restored as %s, now asked for as %s", name, r.desc, desc)
		}
		if !c.modeSet {
			st.mode = r.mode
		}
		err := forEntries(r.data, func(k, v []byte) error {
			kk, err := ks.Decode(k)
			if err != nil {
				return fmt.Errorf("key %x: %w", k, err)
			}
			vv, err := vs.Decode(v)
			if err != nil {
				return fmt.Errorf("value of key %v: %w", kk, err)
			}
			st.m[kk] = vv
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("state %q: restored bytes do not decode as %s: %w", name, desc, err)
		}
		delete(s.raw, name)
	}
	s.bound[name] = st
	return st, nil
}

// Get returns the value of k and whether it is present.
func (s *State[K, V]) Get(k K) (V, bool) {
	v, ok := s.m[k]
	return v, ok
}

// Put sets the value of k.
func (s *State[K, V]) Put(k K, v V) { s.m[k] = v }

// Delete removes k.
func (s *State[K, V]) Delete(k K) { delete(s.m, k) }

// Len returns the number of keys.
func (s *State[K, V]) Len() int { return len(s.m) }

// Range calls f for every key and value, in no particular order, until f
// returns false. f must not change the state.
func (s *State[K, V]) Range(f func(K, V) bool) {
	for k, v := range s.m {
		if !f(k, v) {
			return
		}
	}
}

func (s *State[K, V]) desc() string             { return "operator " + typeName[K]() + " " + typeName[V]() }
func (s *State[K, V]) restoreMode() RestoreMode { return s.mode }

// encode appends the entries in ascending order of their encoded keys,
// so equal states encode equally.
func (s *State[K, V]) encode(dst []byte) ([]byte, error) {
	type kv struct{ k, v []byte }
	es := make([]kv, 0, len(s.m))
	var buf []byte
	for k, v := range s.m {
		var err error
		start := len(buf)
		if buf, err = s.ks.Append(buf, k); err != nil {
			return dst, fmt.Errorf("key %v: %w", k, err)
		}
		mid := len(buf)
		if buf, err = s.vs.Append(buf, v); err != nil {
			return dst, fmt.Errorf("value of key %v: %w", k, err)
		}
		es = append(es, kv{buf[start:mid:mid], buf[mid:len(buf):len(buf)]})
	}
	sort.Slice(es, func(i, j int) bool { return bytes.Compare(es[i].k, es[j].k) < 0 })
	dst = binary.AppendUvarint(dst, uint64(len(es)))
	for i, e := range es {
		if i > 0 && bytes.Equal(e.k, es[i-1].k) {
			return dst, fmt.Errorf("two keys encode as %x (the key serializer is not one-to-one)", e.k)
		}
		dst = appendBytes(appendBytes(dst, e.k), e.v)
	}
	return dst, nil
}

// checkName refuses a state name that is empty, holds a NUL byte or is
// reserved for the runtime (it starts with "egret.").
func checkName(name string) error {
	if err := statebackend.CheckState(name); err != nil {
		return fmt.Errorf("state %q: the name is empty or contains a NUL byte", name)
	}
	if len(name) >= len(reservedPrefix) && name[:len(reservedPrefix)] == reservedPrefix {
		return fmt.Errorf("state %q: names starting with %q are the runtime's", name, reservedPrefix)
	}
	return nil
}

const reservedPrefix = "egret."

// statesMagic starts an encoded set of operator states (version 2; version
// 1 was gob maps).
var statesMagic = []byte("EGS2")

// MarshalBinary encodes the operator states of s (bound and unbound) and
// the descriptors of its keyed states (their contents are in the state
// backend):
//
//	"EGS2" count:uvarint (name desc mode:byte entries){count}
//	       keyed:uvarint (name desc){keyed}
//	entries = n:uvarint (key value){n}
//
// where every name, desc, entries, key and value is its length (uvarint)
// then its bytes, states in ascending name order and entries in ascending
// key order, so equal states encode equally.
func (s *States) MarshalBinary() ([]byte, error) {
	names := make([]string, 0, len(s.raw)+len(s.bound))
	for n := range s.raw {
		names = append(names, n)
	}
	for n := range s.bound {
		names = append(names, n)
	}
	sort.Strings(names)
	out := append([]byte(nil), statesMagic...)
	out = binary.AppendUvarint(out, uint64(len(names)))
	var data []byte
	for _, n := range names {
		r, ok := s.raw[n]
		if b, bound := s.bound[n]; bound {
			var err error
			if data, err = b.encode(data[:0]); err != nil {
				return nil, fmt.Errorf("state %q: encode: %w", n, err)
			}
			r, ok = opRaw{desc: b.desc(), mode: b.restoreMode(), data: data}, true
		}
		if !ok {
			continue
		}
		out = appendBytes(out, []byte(n))
		out = appendBytes(out, []byte(r.desc))
		out = append(out, byte(r.mode))
		out = appendBytes(out, r.data)
	}
	keyed := make([]string, 0, len(s.keyed))
	for n := range s.keyed {
		keyed = append(keyed, n)
	}
	sort.Strings(keyed)
	out = binary.AppendUvarint(out, uint64(len(keyed)))
	for _, n := range keyed {
		out = appendBytes(appendBytes(out, []byte(n)), []byte(s.keyed[n]))
	}
	return out, nil
}

// UnmarshalStates decodes a set of operator states encoded by
// MarshalBinary (with no state backend: OpenStates restores a task). An
// empty b is an empty set. The states' contents are decoded when NewState
// binds them.
func UnmarshalStates(b []byte) (*States, error) {
	s := NewStates()
	if len(b) == 0 {
		return s, nil
	}
	if !bytes.HasPrefix(b, statesMagic) {
		if bytes.HasPrefix(b, []byte("EGS1")) {
			return nil, errors.New("states: saved by an older Egret (gob-encoded states, EGS1); restore from a checkpoint of this version")
		}
		return nil, errors.New("states: not an encoded set of states (bad magic)")
	}
	d := decoder{b: b[len(statesMagic):]}
	count := d.count("state count")
	for i := uint64(0); i < count && d.err == nil; i++ {
		name, desc, mode, data := string(d.bytes("state name")), string(d.bytes("state descriptor")), d.byte("restore mode"), d.bytes("state data")
		switch {
		case d.err != nil:
		case checkName(name) != nil:
			d.fail(fmt.Errorf("states: bad state name %q", name))
		case mode > byte(UnionRestore):
			d.fail(fmt.Errorf("states: state %q: bad restore mode %d", name, mode))
		case s.raw[name].desc != "":
			d.fail(fmt.Errorf("states: state %q twice", name))
		case desc == "":
			d.fail(fmt.Errorf("states: state %q: empty descriptor", name))
		default:
			if err := forEntries(data, func(k, v []byte) error { return nil }); err != nil {
				d.fail(fmt.Errorf("states: state %q: %w", name, err))
			}
			s.raw[name] = opRaw{desc: desc, mode: RestoreMode(mode), data: bytes.Clone(data)}
		}
	}
	keyed := d.count("keyed state count")
	for i := uint64(0); i < keyed && d.err == nil; i++ {
		name, desc := string(d.bytes("keyed state name")), string(d.bytes("keyed state descriptor"))
		switch {
		case d.err != nil:
		case checkName(name) != nil:
			d.fail(fmt.Errorf("states: bad keyed state name %q", name))
		case s.keyed[name] != "" || s.raw[name].desc != "":
			d.fail(fmt.Errorf("states: state %q twice", name))
		case desc == "":
			d.fail(fmt.Errorf("states: keyed state %q: empty descriptor", name))
		default:
			s.keyed[name] = desc
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Errorf("states: %d bytes after the last state", len(d.b)))
	}
	if d.err != nil {
		return nil, d.err
	}
	return s, nil
}

// RedistributeStates returns the operator states of task index of
// parallelism tasks, from the operator states of every task of the
// component at a checkpoint taken with another parallelism (olds, in task
// order; MarshalBinary's bytes). A state restored with UnionRestore holds
// the entries of every old task (where two hold a key, the first old task
// in olds wins); one restored with SplitRestore holds a contiguous share
// of all entries sorted by encoded key (share i of parallelism, of sizes
// that differ by at most one), so every entry reaches exactly one task.
// The descriptors of the keyed states are kept (their contents move with
// their key groups). The old tasks must agree on the type and restore
// mode of each state.
func RedistributeStates(olds [][]byte, index, parallelism int) ([]byte, error) {
	if parallelism < 1 || index < 0 || index >= parallelism {
		return nil, fmt.Errorf("states: task index %d is not one of %d", index, parallelism)
	}
	type merged struct {
		desc    string
		mode    RestoreMode
		entries [][2][]byte
		seen    map[string]bool
	}
	all := map[string]*merged{}
	out := NewStates()
	for i, b := range olds {
		s, err := UnmarshalStates(b)
		if err != nil {
			return nil, fmt.Errorf("old task %d: %w", i, err)
		}
		for n, r := range s.raw {
			m := all[n]
			if m == nil {
				m = &merged{desc: r.desc, mode: r.mode, seen: map[string]bool{}}
				all[n] = m
			} else if m.desc != r.desc || m.mode != r.mode {
				return nil, fmt.Errorf("states: state %q is %s (%s) in one old task, %s (%s) in old task %d", n, m.desc, m.mode, r.desc, r.mode, i)
			}
			_ = forEntries(r.data, func(k, v []byte) error {
				if !m.seen[string(k)] {
					m.seen[string(k)] = true
					m.entries = append(m.entries, [2][]byte{k, v})
				}
				return nil
			})
		}
		for n, d := range s.keyed {
			if old, ok := out.keyed[n]; ok && old != d {
				return nil, fmt.Errorf("states: keyed state %q is %s in one old task, %s in old task %d", n, old, d, i)
			}
			out.keyed[n] = d
		}
	}
	for n, m := range all {
		es := m.entries
		if m.mode == SplitRestore {
			slices.SortFunc(es, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
			es = es[index*len(es)/parallelism : (index+1)*len(es)/parallelism]
		}
		data := binary.AppendUvarint(nil, uint64(len(es)))
		for _, e := range es {
			data = appendBytes(appendBytes(data, e[0]), e[1])
		}
		out.raw[n] = opRaw{desc: m.desc, mode: m.mode, data: data}
	}
	return out.MarshalBinary()
}

func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// forEntries calls f with every entry of encoded operator-state entries,
// and refuses damaged ones.
func forEntries(data []byte, f func(k, v []byte) error) error {
	d := decoder{b: data}
	n := d.count("entry count")
	for i := uint64(0); i < n && d.err == nil; i++ {
		k, v := d.bytes("key"), d.bytes("value")
		if d.err == nil {
			if err := f(k, v); err != nil {
				return err
			}
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Errorf("%d bytes after the last entry", len(d.b)))
	}
	return d.err
}

// decoder reads length-prefixed parts; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) count(what string) uint64 {
	if d.err != nil {
		return 0
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)) || n > maxEntries {
		d.fail(fmt.Errorf("states: bad %s", what))
		return 0
	}
	d.b = d.b[k:]
	return n
}

// maxEntries bounds a count read (every counted item takes a byte at
// least, so a larger count is damage anyway).
const maxEntries = 1 << 40

func (d *decoder) bytes(what string) []byte {
	if d.err != nil {
		return nil
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)-k) {
		d.fail(fmt.Errorf("states: truncated %s", what))
		return nil
	}
	v := d.b[k : k+int(n)]
	d.b = d.b[k+int(n):]
	return v
}

func (d *decoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail(fmt.Errorf("states: truncated %s", what))
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}
