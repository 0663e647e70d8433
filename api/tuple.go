package api

import (
	"fmt"
	"time"
)

// System component and stream names used by the runtime.
const (
	// SystemComponent is the source component of tick tuples.
	SystemComponent = "__system"
	// TickStream is the stream of tick tuples.
	TickStream = "__tick"
)

// Tuple is one tuple received by a bolt.
type Tuple interface {
	// Len is the number of values.
	Len() int
	// Value returns the i-th value.
	Value(i int) any
	// Values returns all values; the slice must not be modified.
	Values() []any
	// Fields returns the stream's field names; must not be modified.
	Fields() []string
	// FieldIndex returns the index of a field, or -1.
	FieldIndex(name string) int
	// ValueByField returns the value of the named field, or nil when the
	// stream has no such field.
	ValueByField(name string) any
	// String, Int64, Uint64, Float64, Bool, Bytes and Time return the i-th
	// value converted to the type; they return the zero value when the
	// value has another type (use Value for a checked type switch).
	String(i int) string
	Int64(i int) int64
	Uint64(i int) uint64
	Float64(i int) float64
	Bool(i int) bool
	Bytes(i int) []byte
	Time(i int) time.Time
	// SourceComponent, SourceStream and SourceTask say where the tuple
	// came from.
	SourceComponent() string
	SourceStream() string
	SourceTask() int
	// IsTick reports whether this is a tick tuple.
	IsTick() bool
}

// BasicTuple is the standard Tuple implementation. The runtime embeds it in
// its own tuples; tests build one with NewTuple.
type BasicTuple struct {
	Component string
	Stream    string
	Task      int
	// FieldNames is shared by every tuple of a stream; never modify it.
	FieldNames []string
	Vals       []any
}

var _ Tuple = (*BasicTuple)(nil)

// NewTuple builds a tuple as a bolt would receive it from the given
// component and stream, for unit tests of bolts. fields may be nil.
func NewTuple(component, stream string, task int, fields []string, values ...any) *BasicTuple {
	return &BasicTuple{Component: component, Stream: stream, Task: task, FieldNames: fields, Vals: values}
}

// NewTickTuple builds a tick tuple, for unit tests of bolts.
func NewTickTuple() *BasicTuple {
	return &BasicTuple{Component: SystemComponent, Stream: TickStream, Task: -1}
}

// Len implements Tuple.
func (t *BasicTuple) Len() int { return len(t.Vals) }

// Value implements Tuple.
func (t *BasicTuple) Value(i int) any {
	if i < 0 || i >= len(t.Vals) {
		return nil
	}
	return t.Vals[i]
}

// Values implements Tuple.
func (t *BasicTuple) Values() []any { return t.Vals }

// Fields implements Tuple.
func (t *BasicTuple) Fields() []string { return t.FieldNames }

// FieldIndex implements Tuple.
func (t *BasicTuple) FieldIndex(name string) int {
	for i, f := range t.FieldNames {
		if f == name {
			return i
		}
	}
	return -1
}

// ValueByField implements Tuple.
func (t *BasicTuple) ValueByField(name string) any { return t.Value(t.FieldIndex(name)) }

// String implements Tuple.
func (t *BasicTuple) String(i int) string {
	switch v := t.Value(i).(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

// Int64 implements Tuple.
func (t *BasicTuple) Int64(i int) int64 {
	switch v := t.Value(i).(type) {
	case int:
		return int64(v)
	case int8:
		return int64(v)
	case int16:
		return int64(v)
	case int32:
		return int64(v)
	case int64:
		return v
	case uint:
		return int64(v)
	case uint8:
		return int64(v)
	case uint16:
		return int64(v)
	case uint32:
		return int64(v)
	case uint64:
		return int64(v)
	case time.Duration:
		return int64(v)
	}
	return 0
}

// Uint64 implements Tuple.
func (t *BasicTuple) Uint64(i int) uint64 {
	if v, ok := t.Value(i).(uint64); ok {
		return v
	}
	return uint64(t.Int64(i))
}

// Float64 implements Tuple.
func (t *BasicTuple) Float64(i int) float64 {
	switch v := t.Value(i).(type) {
	case float64:
		return v
	case float32:
		return float64(v)
	}
	return float64(t.Int64(i))
}

// Bool implements Tuple.
func (t *BasicTuple) Bool(i int) bool {
	v, _ := t.Value(i).(bool)
	return v
}

// Bytes implements Tuple.
func (t *BasicTuple) Bytes(i int) []byte {
	switch v := t.Value(i).(type) {
	case []byte:
		return v
	case string:
		return []byte(v)
	}
	return nil
}

// Time implements Tuple.
func (t *BasicTuple) Time(i int) time.Time {
	v, _ := t.Value(i).(time.Time)
	return v
}

// SourceComponent implements Tuple.
func (t *BasicTuple) SourceComponent() string { return t.Component }

// SourceStream implements Tuple.
func (t *BasicTuple) SourceStream() string { return t.Stream }

// SourceTask implements Tuple.
func (t *BasicTuple) SourceTask() int { return t.Task }

// IsTick implements Tuple.
func (t *BasicTuple) IsTick() bool { return t.Component == SystemComponent && t.Stream == TickStream }

// GoString shows the tuple in test failures.
func (t *BasicTuple) GoString() string {
	return fmt.Sprintf("Tuple{%s/%s task %d: %v}", t.Component, t.Stream, t.Task, t.Vals)
}
