package tuple

import (
	"testing"
	"time"
)

// benchTuple is a typical small tuple: a word, a count, a timestamp, a score.
var benchTuple = []any{"user-12345", int64(42), time.Unix(1700000000, 5), 0.75, true}

func BenchmarkAppendValues(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendValues(buf[:0], benchTuple, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkReader(b *testing.B) {
	enc, _ := AppendValues(nil, benchTuple, nil)
	var r Reader
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		r.Reset(enc)
		if _, err := r.Count(); err != nil {
			b.Fatal(err)
		}
		_, err1 := r.StringBytes()
		_, err2 := r.Int()
		_, err3 := r.Time()
		_, err4 := r.Float()
		_, err5 := r.Bool()
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil {
			b.Fatal("read error")
		}
	}
}

func BenchmarkDecodeValues(b *testing.B) {
	enc, _ := AppendValues(nil, benchTuple, nil)
	dst := make([]any, 0, 8)
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		var err error
		if dst, err = DecodeValues(enc, dst[:0], nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValueBounds(b *testing.B) {
	enc, _ := AppendValues(nil, benchTuple, nil)
	offs := make([]int32, 0, 8)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if offs, err = ValueBounds(enc, offs[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFieldsHash(b *testing.B) {
	b.Run("string", func(b *testing.B) {
		fields := []int{0}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := FieldsHash(nil, benchTuple, fields); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("string+int", func(b *testing.B) {
		fields := []int{0, 1}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := FieldsHash(nil, benchTuple, fields); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoded/string+int", func(b *testing.B) {
		enc, _ := AppendValues(nil, benchTuple, nil)
		fields := []int{0, 1}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := HashEncodedFields(enc, fields); err != nil {
				b.Fatal(err)
			}
		}
	})
}
