package api

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/tuple"
)

// currentKey is the key keyed state is scoped to: its canonical bytes
// (core/tuple.AppendKey, the input of the fields-grouping hash), its key
// group, and where its values are (the tuple's fields, or the values
// given to SetCurrentKey).
type currentKey struct {
	set    bool
	bytes  []byte
	group  int
	vals   []any
	fields []int // nil: vals are the key's values
	own    []any // the buffer of SetCurrentKey's values
}

// errNoKey is returned by keyed state used without a current key.
var errNoKey = errors.New("no current key: keyed state and timers are used while a tuple of an input with a fields grouping is processed, in OnTimer, or after States.SetCurrentKey")

// SetCurrentKey makes vals the current key: what keyed state and timers
// are scoped to until the runtime or another call changes it. The runtime
// sets it before Execute from the grouping fields of a tuple of an input
// with a fields grouping, and before OnTimer from the timer's key; a
// spout, or a bolt with other groupings, selects its key with this call.
// The key must belong to one of the task's key groups (a bolt gets such
// keys from a fields grouping on them); keys are equal when the fields
// grouping hashes them equally (int32(7) and int64(7) are one key).
func (s *States) SetCurrentKey(vals ...any) error {
	if s.b == nil {
		return errNoBackend
	}
	if len(vals) == 0 {
		return errors.New("SetCurrentKey: a key has at least one value")
	}
	k, err := tuple.AppendKey(s.key.bytes[:0], s.reg, vals...)
	if err != nil {
		return fmt.Errorf("SetCurrentKey: %w", err)
	}
	g := keygroup.Of(xxhash.Sum64(k), s.opt.MaxParallelism)
	if !s.opt.Groups.Contains(g) {
		s.key.set = false
		return fmt.Errorf("SetCurrentKey(%v): the key's group %d is not one of this task's %v (route the key to this task with a fields grouping on it)", vals, g, s.opt.Groups)
	}
	own := append(s.key.own[:0], vals...)
	s.key = currentKey{set: true, bytes: k, group: g, vals: own, own: own}
	return nil
}

// SetKeyFields makes the values of tuple at fields the current key: the
// runtime calls it before Execute for a tuple of an input with a fields
// grouping. vals must stay unchanged while the key is current.
func (s *States) SetKeyFields(vals []any, fields []int) error {
	k, err := tuple.AppendFieldsKey(s.key.bytes[:0], s.reg, vals, fields)
	if err != nil {
		s.key.set = false
		return err
	}
	g := keygroup.Of(xxhash.Sum64(k), s.opt.MaxParallelism)
	if !s.opt.Groups.Contains(g) {
		s.key.set = false
		return fmt.Errorf("the key of a tuple is in key group %d, not one of this task's %v", g, s.opt.Groups)
	}
	s.key = currentKey{set: true, bytes: k, group: g, vals: vals, fields: fields, own: s.key.own}
	return nil
}

// ClearCurrentKey leaves no key current.
func (s *States) ClearCurrentKey() { s.key.set = false }

// CurrentKey returns the values of the current key (a new slice) and
// whether there is one.
func (s *States) CurrentKey() ([]any, bool) {
	if !s.key.set {
		return nil, false
	}
	if s.key.fields == nil {
		return append([]any(nil), s.key.vals...), true
	}
	out := make([]any, len(s.key.fields))
	for i, f := range s.key.fields {
		out[i] = s.key.vals[f]
	}
	return out, true
}

// keyPrefix appends the stored prefix of the current key's entries in a
// state: its length then its bytes.
func (s *States) keyPrefix(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s.key.bytes)))
	return append(dst, s.key.bytes...)
}
