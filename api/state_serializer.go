package api

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// Serializer turns the values of one type into bytes and back, for the
// states that hold them. Append appends the encoding of v to dst; Decode
// returns the value b encodes, where b is exactly one value's bytes and is
// valid during the call only (a decoded value must not alias it). Both run
// on the task's goroutine. A serializer used for map keys must be
// deterministic: equal keys must encode to equal bytes.
type Serializer[T any] interface {
	Append(dst []byte, v T) ([]byte, error)
	Decode(b []byte) (T, error)
}

// DefaultSerializer returns the serializer a state uses for T unless
// WithSerializer or WithKeySerializer says otherwise: a compact fixed
// encoding for the built-in scalar types (the integers as varints, floats
// as 8 or 4 bytes, strings and byte slices as their bytes, bool, time.Time
// and time.Duration), and CBOR (RFC 8949, deterministic encoding) for every
// other type: structs are encoded by their exported fields, like gob or
// encoding/json, without declaring anything. docs/state.md has the
// measurements behind the choice.
func DefaultSerializer[T any]() Serializer[T] {
	var zero T
	var s any
	switch any(zero).(type) {
	case int:
		s = varintSer[int]{}
	case int8:
		s = varintSer[int8]{}
	case int16:
		s = varintSer[int16]{}
	case int32:
		s = varintSer[int32]{}
	case int64:
		s = varintSer[int64]{}
	case uint:
		s = uvarintSer[uint]{}
	case uint8:
		s = uvarintSer[uint8]{}
	case uint16:
		s = uvarintSer[uint16]{}
	case uint32:
		s = uvarintSer[uint32]{}
	case uint64:
		s = uvarintSer[uint64]{}
	case float64:
		s = float64Ser{}
	case float32:
		s = float32Ser{}
	case string:
		s = stringSer{}
	case []byte:
		s = bytesSer{}
	case bool:
		s = boolSer{}
	case time.Time:
		s = timeSer{}
	case time.Duration:
		s = varintSer[time.Duration]{}
	default:
		return CBORSerializer[T]()
	}
	return s.(Serializer[T])
}

var errTrailing = errors.New("bytes after the value")

type varintSer[T int | int8 | int16 | int32 | int64 | time.Duration] struct{}

func (varintSer[T]) Append(dst []byte, v T) ([]byte, error) {
	return binary.AppendVarint(dst, int64(v)), nil
}

func (varintSer[T]) Decode(b []byte) (T, error) {
	x, n := binary.Varint(b)
	switch {
	case n <= 0:
		return 0, fmt.Errorf("bad varint %x", b)
	case n != len(b):
		return 0, errTrailing
	case int64(T(x)) != x:
		return 0, fmt.Errorf("%d overflows %T", x, T(0))
	}
	return T(x), nil
}

type uvarintSer[T uint | uint8 | uint16 | uint32 | uint64] struct{}

func (uvarintSer[T]) Append(dst []byte, v T) ([]byte, error) {
	return binary.AppendUvarint(dst, uint64(v)), nil
}

func (uvarintSer[T]) Decode(b []byte) (T, error) {
	x, n := binary.Uvarint(b)
	switch {
	case n <= 0:
		return 0, fmt.Errorf("bad uvarint %x", b)
	case n != len(b):
		return 0, errTrailing
	case uint64(T(x)) != x:
		return 0, fmt.Errorf("%d overflows %T", x, T(0))
	}
	return T(x), nil
}

type float64Ser struct{}

func (float64Ser) Append(dst []byte, v float64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(v)), nil
}

func (float64Ser) Decode(b []byte) (float64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("a float64 is 8 bytes, not %d", len(b))
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
}

type float32Ser struct{}

func (float32Ser) Append(dst []byte, v float32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(dst, math.Float32bits(v)), nil
}

func (float32Ser) Decode(b []byte) (float32, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("a float32 is 4 bytes, not %d", len(b))
	}
	return math.Float32frombits(binary.BigEndian.Uint32(b)), nil
}

type stringSer struct{}

func (stringSer) Append(dst []byte, v string) ([]byte, error) { return append(dst, v...), nil }
func (stringSer) Decode(b []byte) (string, error)             { return string(b), nil }

type bytesSer struct{}

func (bytesSer) Append(dst []byte, v []byte) ([]byte, error) { return append(dst, v...), nil }
func (bytesSer) Decode(b []byte) ([]byte, error)             { return bytes.Clone(b), nil }

type boolSer struct{}

func (boolSer) Append(dst []byte, v bool) ([]byte, error) {
	if v {
		return append(dst, 1), nil
	}
	return append(dst, 0), nil
}

func (boolSer) Decode(b []byte) (bool, error) {
	if len(b) != 1 || b[0] > 1 {
		return false, fmt.Errorf("bad bool %x", b)
	}
	return b[0] == 1, nil
}

// timeSer encodes an instant (not its location) as seconds and
// nanoseconds since the Unix epoch.
type timeSer struct{}

func (timeSer) Append(dst []byte, v time.Time) ([]byte, error) {
	dst = binary.AppendVarint(dst, v.Unix())
	return binary.AppendUvarint(dst, uint64(v.Nanosecond())), nil
}

func (timeSer) Decode(b []byte) (time.Time, error) {
	sec, n := binary.Varint(b)
	if n <= 0 {
		return time.Time{}, fmt.Errorf("bad time %x", b)
	}
	ns, m := binary.Uvarint(b[n:])
	if m <= 0 || ns >= 1e9 {
		return time.Time{}, fmt.Errorf("bad time %x", b)
	}
	if n+m != len(b) {
		return time.Time{}, errTrailing
	}
	return time.Unix(sec, int64(ns)), nil
}

var (
	cborEnc cbor.EncMode
	cborDec cbor.DecMode
)

func init() {
	var err error
	// Deterministic (map keys sorted) so that a struct or map used as a
	// map-state key encodes equally every time; times keep nanoseconds.
	eo := cbor.CoreDetEncOptions()
	eo.Time = cbor.TimeRFC3339Nano
	eo.TimeTag = cbor.EncTagRequired // a time in an `any` decodes as a time
	if cborEnc, err = eo.EncMode(); err != nil {
		panic(err)
	}
	// What a value typed `any` (a tuple's values) decodes as: the types
	// of tuple values (int64, float64, string, []byte, bool, time.Time,
	// []any, map[string]any).
	do := cbor.DecOptions{
		MaxArrayElements: math.MaxInt32,
		MaxMapPairs:      math.MaxInt32,
		IntDec:           cbor.IntDecConvertSignedOrBigInt,
		DefaultMapType:   reflect.TypeFor[map[string]any](),
	}
	if cborDec, err = do.DecMode(); err != nil {
		panic(err)
	}
}

type cborSer[T any] struct{}

// CBORSerializer returns a serializer that encodes T in CBOR
// (github.com/fxamacker/cbor, deterministic encoding): the default for
// every type but the built-in scalars. Structs are encoded by their
// exported fields (a `cbor:"name"` or `json:"name"` tag renames one).
func CBORSerializer[T any]() Serializer[T] { return cborSer[T]{} }

// check refuses a type CBOR would encode as nothing: a struct without
// exported fields, where gob would have refused it.
func (cborSer[T]) check() error { return checkExported(reflect.TypeFor[T](), map[reflect.Type]bool{}) }

func checkExported(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	if t.Implements(reflect.TypeFor[cbor.Marshaler]()) || t.Implements(reflect.TypeFor[encoding.BinaryMarshaler]()) {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return checkExported(t.Elem(), seen)
	case reflect.Map:
		if err := checkExported(t.Key(), seen); err != nil {
			return err
		}
		return checkExported(t.Elem(), seen)
	case reflect.Struct:
		if t == reflect.TypeFor[time.Time]() {
			return nil
		}
		n := 0
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				n++
				if err := checkExported(f.Type, seen); err != nil {
					return err
				}
			}
		}
		if n == 0 && t.NumField() > 0 {
			return fmt.Errorf("type %s has no exported fields, so it would be saved as nothing: export its fields or give the state a serializer (WithSerializer)", t)
		}
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return fmt.Errorf("a %s cannot be saved in state", t)
	}
	return nil
}

func (cborSer[T]) Append(dst []byte, v T) ([]byte, error) {
	b, err := cborEnc.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

func (cborSer[T]) Decode(b []byte) (T, error) {
	var v T
	err := cborDec.Unmarshal(b, &v)
	return v, err
}

type gobSer[T any] struct{}

// GobSerializer returns a serializer that encodes each value with
// encoding/gob on its own (with its type description, so it is larger and
// slower than the default; measured in docs/state.md). It is there for
// types that implement gob.GobEncoder and nothing else.
func GobSerializer[T any]() Serializer[T] { return gobSer[T]{} }

func (gobSer[T]) Append(dst []byte, v T) ([]byte, error) {
	w := bytes.NewBuffer(dst)
	err := gob.NewEncoder(w).Encode(&v)
	return w.Bytes(), err
}

func (gobSer[T]) Decode(b []byte) (T, error) {
	var v T
	err := gob.NewDecoder(bytes.NewReader(b)).Decode(&v)
	return v, err
}

// typeName names T in state descriptors and errors.
func typeName[T any]() string { return reflect.TypeFor[T]().String() }
