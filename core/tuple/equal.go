package tuple

import (
	"bytes"
	"math"
	"reflect"
	"time"
)

// Equal reports whether a and b are the same tuple value in the sense of
// this codec: the same Go type and value, with floats compared by bits
// (so a NaN equals itself and -0 differs from +0), times by instant
// (time.Time.Equal), nil and empty slices and maps equal, lists and maps
// element by element, and user types by reflect.DeepEqual. A value
// round-tripped through AppendValue and DecodeValue is Equal to the
// original.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
		string, time.Duration:
		return a == b
	}
	return reflect.DeepEqual(a, b)
}

// ValuesEqual reports whether two tuples have Equal values pairwise.
func ValuesEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
