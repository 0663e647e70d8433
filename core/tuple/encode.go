package tuple

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"
)

// AppendValue appends the encoding of v to dst and returns the extended
// slice. It does not allocate for the basic kinds (nil, bool, integers,
// floats, string, []byte, time.Time, time.Duration) when dst has capacity.
// Values of other types are encoded with the Codec registered for their
// type in reg (nil: no user types); a type that is neither built in nor
// registered is an error wrapping ErrUnsupportedType. On error the returned
// slice is dst with its original length.
func AppendValue(dst []byte, v any, reg *Registry) ([]byte, error) {
	start := len(dst)
	out, err := appendValue(dst, v, reg, 0)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

// AppendValues appends the encoding of a tuple: the number of values as a
// uvarint, then each value as by AppendValue. The same allocation and error
// rules apply.
func AppendValues(dst []byte, vals []any, reg *Registry) ([]byte, error) {
	start := len(dst)
	out := appendUvarint(dst, uint64(len(vals)))
	for i, v := range vals {
		var err error
		out, err = appendValue(out, v, reg, 0)
		if err != nil {
			return dst[:start], fmt.Errorf("tuple: value %d: %w", i, err)
		}
	}
	return out, nil
}

func appendValue(dst []byte, v any, reg *Registry, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, tagNil), nil
	case bool:
		if x {
			return append(dst, tagTrue), nil
		}
		return append(dst, tagFalse), nil
	case int:
		return appendUvarint(append(dst, tagInt), zigzag(int64(x))), nil
	case int8:
		return appendUvarint(append(dst, tagInt8), zigzag(int64(x))), nil
	case int16:
		return appendUvarint(append(dst, tagInt16), zigzag(int64(x))), nil
	case int32:
		return appendUvarint(append(dst, tagInt32), zigzag(int64(x))), nil
	case int64:
		return appendUvarint(append(dst, tagInt64), zigzag(x)), nil
	case uint:
		return appendUvarint(append(dst, tagUint), uint64(x)), nil
	case uint8:
		return appendUvarint(append(dst, tagUint8), uint64(x)), nil
	case uint16:
		return appendUvarint(append(dst, tagUint16), uint64(x)), nil
	case uint32:
		return appendUvarint(append(dst, tagUint32), uint64(x)), nil
	case uint64:
		return appendUvarint(append(dst, tagUint64), x), nil
	case float32:
		return binary.LittleEndian.AppendUint32(append(dst, tagFloat32), math.Float32bits(x)), nil
	case float64:
		return binary.LittleEndian.AppendUint64(append(dst, tagFloat64), math.Float64bits(x)), nil
	case string:
		dst = appendUvarint(append(dst, tagString), uint64(len(x)))
		return append(dst, x...), nil
	case []byte:
		dst = appendUvarint(append(dst, tagBytes), uint64(len(x)))
		return append(dst, x...), nil
	case time.Time:
		return appendTime(dst, x)
	case time.Duration:
		return appendUvarint(append(dst, tagDuration), zigzag(int64(x))), nil
	case []any:
		return appendList(dst, x, reg, depth)
	case map[string]any:
		return appendMap(dst, x, reg, depth)
	}
	return appendUser(dst, v, reg)
}

func appendTime(dst []byte, t time.Time) ([]byte, error) {
	sec := t.Unix()
	if sec > maxUnixSec { // only for times hundreds of billions of years BC, where Unix() wraps
		return dst, fmt.Errorf("tuple: time %v is outside the encodable range: %w", t, ErrUnsupportedType)
	}
	dst = appendUvarint(append(dst, tagTime), zigzag(sec))
	return appendUvarint(dst, uint64(t.Nanosecond())), nil
}

func appendList(dst []byte, l []any, reg *Registry, depth int) ([]byte, error) {
	if depth >= MaxDepth {
		return dst, fmt.Errorf("tuple: lists and maps nested more than %d levels (a list that contains itself?): %w", MaxDepth, ErrTooDeep)
	}
	dst = appendUvarint(append(dst, tagList), uint64(len(l)))
	for i, e := range l {
		var err error
		dst, err = appendValue(dst, e, reg, depth+1)
		if err != nil {
			return dst, fmt.Errorf("list element %d: %w", i, err)
		}
	}
	return dst, nil
}

// sortedKeys returns the keys of m in ascending byte order, using scratch
// when it is large enough.
func sortedKeys(m map[string]any, scratch []string) []string {
	keys := scratch[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendMap(dst []byte, m map[string]any, reg *Registry, depth int) ([]byte, error) {
	if depth >= MaxDepth {
		return dst, fmt.Errorf("tuple: lists and maps nested more than %d levels (a map that contains itself?): %w", MaxDepth, ErrTooDeep)
	}
	var scratch [16]string
	keys := sortedKeys(m, scratch[:])
	dst = appendUvarint(append(dst, tagMap), uint64(len(keys)))
	for _, k := range keys {
		dst = appendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
		var err error
		dst, err = appendValue(dst, m[k], reg, depth+1)
		if err != nil {
			return dst, fmt.Errorf("map key %q: %w", k, err)
		}
	}
	return dst, nil
}

var zeros [10]byte

func appendUser(dst []byte, v any, reg *Registry) ([]byte, error) {
	e := reg.lookupType(reflect.TypeOf(v))
	if e == nil {
		return dst, fmt.Errorf("tuple: cannot encode a value of type %T: it is not a built-in kind "+
			"(nil, bool, ints, uints, floats, string, []byte, time.Time, time.Duration, []any, map[string]any); "+
			"register a Codec for it with Registry.Register and pass that registry: %w", v, ErrUnsupportedType)
	}
	p := len(dst) + 4 // payload start, with one byte reserved for its length
	dst = append(dst, tagUser, byte(e.id), byte(e.id>>8), 0)
	out, err := e.codec.Append(dst, v)
	if err != nil {
		return dst[:p-4], fmt.Errorf("tuple: codec for %T (user type id %d): %w", v, e.id, err)
	}
	if len(out) < p {
		return dst[:p-4], fmt.Errorf("tuple: codec for %T (user type id %d) returned a slice shorter than its dst; Append must append to dst: %w", v, e.id, ErrUnsupportedType)
	}
	n := len(out) - p
	if n < 0x80 {
		out[p-1] = byte(n)
		return out, nil
	}
	k := uvarintLen(uint64(n))
	out = append(out, zeros[:k-1]...)
	copy(out[p-1+k:], out[p:p+n])
	appendUvarint(out[:p-1], uint64(n)) // overwrites the reserved bytes in place
	return out, nil
}
