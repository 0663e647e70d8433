package tuple

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// Codec encodes and decodes the values of one user type.
//
// Append appends the payload of v (which has the registered type) to dst and
// returns the extended slice; the tuple encoding adds the tag, id and length
// around it. Decode turns a payload back into a value of the registered
// type. b aliases the buffer being decoded: a Decode that keeps bytes beyond
// the call must copy them. Both must be deterministic (equal values give
// equal payloads) for fields grouping to route equal keys together, and
// safe for concurrent use.
type Codec interface {
	Append(dst []byte, v any) ([]byte, error)
	Decode(b []byte) (any, error)
}

type userEntry struct {
	id    uint16
	typ   reflect.Type
	codec Codec
}

type registryTables struct {
	byType map[reflect.Type]*userEntry
	byID   map[uint16]*userEntry
}

// Registry maps user types to codecs under stable numeric ids. The same ids
// must be registered in every process of a topology. Create one with
// NewRegistry (or use a zero Registry); a nil *Registry is valid and knows no user types.
//
// Lookups are lock-free (an atomically swapped immutable table), so a
// Registry is safe for concurrent use, including Register while other
// goroutines encode and decode.
type Registry struct {
	mu     sync.Mutex // serialises Register
	tables atomic.Pointer[registryTables]
}

// NewRegistry returns an empty registry. The zero Registry is also ready
// to use.
func NewRegistry() *Registry { return &Registry{} }

// builtinTypes are encoded natively and cannot be registered.
var builtinTypes = func() map[reflect.Type]bool {
	m := map[reflect.Type]bool{}
	for _, v := range []any{
		false, int(0), int8(0), int16(0), int32(0), int64(0),
		uint(0), uint8(0), uint16(0), uint32(0), uint64(0), float32(0), float64(0),
		"", []byte(nil), time.Time{}, time.Duration(0), []any(nil), map[string]any(nil),
	} {
		m[reflect.TypeOf(v)] = true
	}
	return m
}()

// Register adds a codec for the type of sample under id. sample may be a
// value of the type or a reflect.Type. Registering an id or a type twice,
// a built-in type, a nil sample or a nil codec is an error wrapping
// ErrRegistry.
func (r *Registry) Register(id uint16, sample any, c Codec) error {
	if r == nil {
		return fmt.Errorf("tuple: register id %d on a nil *Registry; create one with NewRegistry: %w", id, ErrRegistry)
	}
	if c == nil {
		return fmt.Errorf("tuple: register id %d: nil Codec: %w", id, ErrRegistry)
	}
	typ, ok := sample.(reflect.Type)
	if !ok {
		typ = reflect.TypeOf(sample)
	}
	if typ == nil {
		return fmt.Errorf("tuple: register id %d: nil sample; pass a value of the type or its reflect.Type: %w", id, ErrRegistry)
	}
	if builtinTypes[typ] {
		return fmt.Errorf("tuple: register id %d: %v is a built-in kind and is always encoded natively: %w", id, typ, ErrRegistry)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.load()
	if e, dup := old.byID[id]; dup {
		return fmt.Errorf("tuple: register %v: id %d is already used by %v: %w", typ, id, e.typ, ErrRegistry)
	}
	if e, dup := old.byType[typ]; dup {
		return fmt.Errorf("tuple: register id %d: type %v is already registered with id %d: %w", id, typ, e.id, ErrRegistry)
	}
	next := &registryTables{
		byType: make(map[reflect.Type]*userEntry, len(old.byType)+1),
		byID:   make(map[uint16]*userEntry, len(old.byID)+1),
	}
	for k, v := range old.byType {
		next.byType[k] = v
	}
	for k, v := range old.byID {
		next.byID[k] = v
	}
	e := &userEntry{id: id, typ: typ, codec: c}
	next.byType[typ] = e
	next.byID[id] = e
	r.tables.Store(next)
	return nil
}

var emptyTables = &registryTables{}

// load returns the current tables; a zero Registry has none yet.
func (r *Registry) load() *registryTables {
	if t := r.tables.Load(); t != nil {
		return t
	}
	return emptyTables
}

func (r *Registry) lookupType(t reflect.Type) *userEntry {
	if r == nil {
		return nil
	}
	return r.load().byType[t]
}

func (r *Registry) lookupID(id uint16) *userEntry {
	if r == nil {
		return nil
	}
	return r.load().byID[id]
}
