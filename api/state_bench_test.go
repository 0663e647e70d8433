package api

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/tuple"
)

// jsonSer is encoding/json, for comparison.
type jsonSer[T any] struct{}

func (jsonSer[T]) Append(dst []byte, v T) ([]byte, error) {
	b, err := json.Marshal(v)
	return append(dst, b...), err
}

func (jsonSer[T]) Decode(b []byte) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// tupleSer is core/tuple's value codec (the wire encoding of tuple
// values), for comparison: it takes any, so a value is boxed.
type tupleSer[T any] struct{}

func (tupleSer[T]) Append(dst []byte, v T) ([]byte, error) { return tuple.AppendValue(dst, v, nil) }

func (tupleSer[T]) Decode(b []byte) (T, error) {
	v, _, err := tuple.DecodeValue(b, nil)
	if err != nil {
		var zero T
		return zero, err
	}
	return v.(T), nil
}

// BenchmarkSerializer measures one encode and one decode of a value per
// op, for the candidate default serializers, on an int64 (a counter), a
// string and a struct; bytes/value is the encoded size. docs/state.md
// lists a run.
func BenchmarkSerializer(b *testing.B) {
	it := item{Name: "auction-1234", N: 987654321, Tags: []string{"red", "blue"}, At: time.Unix(1700000000, 5)}
	benchSer(b, "int64/default", DefaultSerializer[int64](), 123456789)
	benchSer(b, "int64/tuple", tupleSer[int64]{}, 123456789)
	benchSer(b, "int64/cbor", CBORSerializer[int64](), 123456789)
	benchSer(b, "int64/gob", GobSerializer[int64](), 123456789)
	benchSer(b, "int64/json", jsonSer[int64]{}, 123456789)
	benchSer(b, "string/default", DefaultSerializer[string](), "user-000123456")
	benchSer(b, "string/tuple", tupleSer[string]{}, "user-000123456")
	benchSer(b, "string/cbor", CBORSerializer[string](), "user-000123456")
	benchSer(b, "string/gob", GobSerializer[string](), "user-000123456")
	benchSer(b, "struct/default(cbor)", DefaultSerializer[item](), it)
	benchSer(b, "struct/gob", GobSerializer[item](), it)
	benchSer(b, "struct/json", jsonSer[item]{}, it)
}

func benchSer[T any](b *testing.B, name string, s Serializer[T], v T) {
	b.Run(name, func(b *testing.B) {
		var buf []byte
		var err error
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if buf, err = s.Append(buf[:0], v); err != nil {
				b.Fatal(err)
			}
			if _, err = s.Decode(buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes/value")
	})
}

// BenchmarkValueStateUpdate is a keyed counter: set the key, read, add,
// write, on each backend.
func BenchmarkValueStateUpdate(b *testing.B) {
	for _, be := range backends {
		b.Run(be, func(b *testing.B) {
			s, _, _ := openB(b, be, nil)
			v, err := NewValueState[int64](s, "count")
			if err != nil {
				b.Fatal(err)
			}
			keys := make([][]any, 10000)
			for i := range keys {
				keys[i] = []any{fmt.Sprint("key-", i)}
			}
			fields := []int{0}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.SetKeyFields(keys[i%len(keys)], fields); err != nil {
					b.Fatal(err)
				}
				n, _, err := v.Value()
				if err != nil {
					b.Fatal(err)
				}
				if err := v.Update(n + 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
