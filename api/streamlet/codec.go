package streamlet

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/egret-stream/egret/core/tuple"
)

// JSONCodec is a tuple.Codec that encodes values of T as JSON, for user
// types crossing processes: b.RegisterType(id, T{}, JSONCodec[T]{}).
// Encoding is deterministic for structs (fields in declaration order), so
// such values may also be keys. Maps encode with sorted keys.
type JSONCodec[T any] struct{}

var _ tuple.Codec = JSONCodec[int]{}

// Append implements tuple.Codec.
func (JSONCodec[T]) Append(dst []byte, v any) ([]byte, error) {
	t, ok := v.(T)
	if !ok {
		return dst, fmt.Errorf("streamlet: JSONCodec[%v] got a %T", reflect.TypeFor[T](), v)
	}
	b, err := json.Marshal(t)
	if err != nil {
		return dst, fmt.Errorf("streamlet: encode %T: %w", v, err)
	}
	return append(dst, b...), nil
}

// Decode implements tuple.Codec.
func (JSONCodec[T]) Decode(b []byte) (any, error) {
	var t T
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("streamlet: decode %v: %w", reflect.TypeFor[T](), err)
	}
	return t, nil
}
