package api

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"sort"
)

// Stateful is implemented by a spout or bolt whose state the runtime
// checkpoints in effectively-once mode (topology.reliability.mode
// effectively-once). Stateless components need nothing.
//
// InitState is called on the task's goroutine after Open or Prepare and
// before the first NextTuple or Execute, with the states of the last
// complete checkpoint (empty ones at the first start). After a rollback
// (any process of the topology died) it is called again with the states of
// the checkpoint rolled back to: the component must then forget what it
// holds outside its states (a spout rewinds to the positions its states
// hold). A component binds its typed states with NewState on every call.
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

// States is the set of named states of one task. The runtime encodes every
// state bound with NewState when the task saves, and keeps the states it
// restored that nothing bound, so a state is never lost by not being read.
type States struct {
	raw   map[string][]byte
	bound map[string]codec
}

type codec interface {
	encode() ([]byte, error)
}

// NewStates returns an empty set of states.
func NewStates() *States { return &States{raw: map[string][]byte{}, bound: map[string]codec{}} }

// State is a typed key-value state of a task. K and V must be encodable
// with encoding/gob (the built-in types, and structs of exported fields).
// It is used from the task's goroutine only.
type State[K comparable, V any] struct {
	m map[K]V
}

// NewState binds the state called name in s, holding its restored contents.
// Binding a name again returns the same state; binding it with other types
// is an error, as is restored bytes that do not decode as map[K]V.
func NewState[K comparable, V any](s *States, name string) (*State[K, V], error) {
	if name == "" {
		return nil, errors.New("state: empty state name")
	}
	if c, ok := s.bound[name]; ok {
		st, ok := c.(*State[K, V])
		if !ok {
			return nil, fmt.Errorf("state %q: bound before as %T, now asked for as %T", name, c, (*State[K, V])(nil))
		}
		return st, nil
	}
	st := &State[K, V]{m: map[K]V{}}
	if b, ok := s.raw[name]; ok {
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&st.m); err != nil {
			return nil, fmt.Errorf("state %q: restored bytes do not decode as %T: %w", name, st.m, err)
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

func (s *State[K, V]) encode() ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(s.m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// statesMagic starts an encoded set of states (version 1).
var statesMagic = []byte("EGS1")

// maxStates bounds the number of states a decoded set may claim.
const maxStates = 1 << 16

// MarshalBinary encodes every state of s (bound and unbound):
//
//	"EGS1" count:uvarint (name_len:uvarint name data_len:uvarint data){count}
//
// in ascending name order, so equal states encode equally.
func (s *States) MarshalBinary() ([]byte, error) {
	enc := make(map[string][]byte, len(s.raw)+len(s.bound))
	for n, b := range s.raw {
		enc[n] = b
	}
	for n, c := range s.bound {
		b, err := c.encode()
		if err != nil {
			return nil, fmt.Errorf("state %q: encode: %w", n, err)
		}
		enc[n] = b
	}
	names := make([]string, 0, len(enc))
	for n := range enc {
		names = append(names, n)
	}
	sort.Strings(names)
	out := append([]byte(nil), statesMagic...)
	out = binary.AppendUvarint(out, uint64(len(names)))
	for _, n := range names {
		out = binary.AppendUvarint(out, uint64(len(n)))
		out = append(out, n...)
		out = binary.AppendUvarint(out, uint64(len(enc[n])))
		out = append(out, enc[n]...)
	}
	return out, nil
}

// UnmarshalStates decodes a set of states encoded by MarshalBinary. An empty
// b is an empty set. The states' contents are decoded when NewState binds
// them.
func UnmarshalStates(b []byte) (*States, error) {
	s := NewStates()
	if len(b) == 0 {
		return s, nil
	}
	if !bytes.HasPrefix(b, statesMagic) {
		return nil, errors.New("states: not an encoded set of states (bad magic)")
	}
	b = b[len(statesMagic):]
	next := func(what string) ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, fmt.Errorf("states: truncated %s", what)
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	count, k := binary.Uvarint(b)
	if k <= 0 || count > maxStates {
		return nil, errors.New("states: bad state count")
	}
	b = b[k:]
	for i := uint64(0); i < count; i++ {
		name, err := next("state name")
		if err != nil {
			return nil, err
		}
		data, err := next("state data")
		if err != nil {
			return nil, err
		}
		if len(name) == 0 {
			return nil, errors.New("states: empty state name")
		}
		if _, dup := s.raw[string(name)]; dup {
			return nil, fmt.Errorf("states: state %q twice", name)
		}
		s.raw[string(name)] = bytes.Clone(data)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("states: %d bytes after the last state", len(b))
	}
	return s, nil
}
