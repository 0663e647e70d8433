package tuple

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
)

// readerDecode rebuilds a value with the typed Reader methods only, so the
// fuzzer can check that the Reader and the decoder agree.
func readerDecode(r *Reader, reg *Registry, depth int) (any, error) {
	switch k := r.Kind(); k {
	case KindNil:
		return nil, r.Nil()
	case KindBool:
		return r.Bool()
	case KindInt, KindInt8, KindInt16, KindInt32, KindInt64:
		v, err := r.Int()
		switch k {
		case KindInt:
			return int(v), err
		case KindInt8:
			return int8(v), err
		case KindInt16:
			return int16(v), err
		case KindInt32:
			return int32(v), err
		}
		return v, err
	case KindUint, KindUint8, KindUint16, KindUint32, KindUint64:
		v, err := r.Uint()
		switch k {
		case KindUint:
			return uint(v), err
		case KindUint8:
			return uint8(v), err
		case KindUint16:
			return uint16(v), err
		case KindUint32:
			return uint32(v), err
		}
		return v, err
	case KindFloat32:
		return r.Float32()
	case KindFloat64:
		return r.Float()
	case KindString:
		return r.StringValue()
	case KindBytes:
		b, err := r.StringBytes()
		return append([]byte{}, b...), err
	case KindTime:
		return r.Time()
	case KindDuration:
		return r.Duration()
	case KindUser:
		return r.Value(reg)
	case KindList:
		if depth >= MaxDepth {
			return nil, ErrTooDeep
		}
		n, err := r.ListLen()
		if err != nil {
			return nil, err
		}
		l := make([]any, n)
		for i := range l {
			if l[i], err = readerDecode(r, reg, depth+1); err != nil {
				return nil, err
			}
		}
		return l, nil
	case KindMap:
		if depth >= MaxDepth {
			return nil, ErrTooDeep
		}
		n, err := r.MapLen()
		if err != nil {
			return nil, err
		}
		m := make(map[string]any, n)
		for i := 0; i < n; i++ {
			k, err := r.MapKey()
			if err != nil {
				return nil, err
			}
			if m[string(k)], err = readerDecode(r, reg, depth+1); err != nil {
				return nil, err
			}
		}
		return m, nil
	}
	return nil, fmt.Errorf("kind %v: %w", r.Kind(), ErrCorrupt)
}

func FuzzDecode(f *testing.F) {
	reg := testRegistry(f)
	for _, v := range roundTripValues() {
		f.Add(mustAppendValues(f, []any{v}, reg))
	}
	f.Add(mustAppendValues(f, []any{"k", 1, 2.5, []any{map[string]any{"a": nil}}, point{1, 2}, blob("x")}, reg))
	for _, h := range []string{"", "00", "01", "0138ffffffff0f", "013902016201016101", "01108000", "0130feffffffffffffffff0100"} {
		b, _ := hex.DecodeString(h)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Every entry point must return cleanly.
		vals, decErr := DecodeValues(b, nil, reg)
		offs, boundsErr := ValueBounds(b, nil)
		v1, n1, oneErr := DecodeValue(b, reg)
		var r Reader
		r.Reset(b)
		_ = r.Skip()
		r.Reset(b)
		_, _ = readerDecode(&r, reg, 0)

		if boundsErr != nil {
			if decErr == nil {
				t.Fatalf("ValueBounds failed (%v) where DecodeValues succeeded", boundsErr)
			}
			if !errors.Is(boundsErr, ErrCorrupt) {
				t.Fatalf("ValueBounds error does not wrap ErrCorrupt: %v", boundsErr)
			}
		}
		if oneErr == nil {
			enc, err := AppendValue(nil, v1, reg)
			if err != nil {
				t.Fatalf("re-encoding %#v: %v", v1, err)
			}
			if !bytes.Equal(enc, b[:n1]) {
				t.Fatalf("DecodeValue/AppendValue round trip:\n in %x\nout %x", b[:n1], enc)
			}
		}
		if decErr != nil {
			if !errors.Is(decErr, ErrCorrupt) && !errors.Is(decErr, ErrNoCodec) {
				t.Fatalf("unexpected error kind: %v", decErr)
			}
			return
		}
		// The input decoded: the encoding is canonical, so it round-trips
		// byte for byte.
		enc, err := AppendValues(nil, vals, reg)
		if err != nil {
			t.Fatalf("re-encoding %#v: %v", vals, err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("round trip:\n in %x\nout %x", b, enc)
		}
		// The Reader reads the same values.
		r.Reset(b)
		n, err := r.Count()
		if err != nil || n != len(vals) || len(offs) != n+1 {
			t.Fatalf("Reader count %d, %v; %d values, %d offsets", n, err, len(vals), len(offs))
		}
		for i := 0; i < n; i++ {
			if r.Offset() != int(offs[i]) {
				t.Fatalf("value %d at %d, ValueBounds says %d", i, r.Offset(), offs[i])
			}
			v, err := readerDecode(&r, reg, 0)
			if err != nil {
				t.Fatalf("Reader value %d: %v", i, err)
			}
			if !Equal(v, vals[i]) {
				t.Fatalf("Reader value %d = %#v, decoder %#v", i, v, vals[i])
			}
		}
		if !r.Done() {
			t.Fatal("Reader did not reach the end")
		}
		// Hashing from values and from bytes agree.
		fields := make([]int, n)
		for i := range fields {
			fields[n-1-i] = i
		}
		h1, err1 := FieldsHash(reg, vals, fields)
		h2, err2 := HashEncodedFields(b, fields)
		if err1 != nil || err2 != nil || h1 != h2 {
			t.Fatalf("FieldsHash %x (%v) != HashEncodedFields %x (%v)", h1, err1, h2, err2)
		}
	})
}

// FuzzSkipScalar: SkipScalar agrees with Kind followed by StringBytes or
// Skip on every value of any input: the same kind, bytes, offset after it,
// and failure.
func FuzzSkipScalar(f *testing.F) {
	reg := testRegistry(f)
	for _, v := range roundTripValues() {
		f.Add(mustAppendValues(f, []any{v}, reg))
	}
	f.Add(mustAppendValues(f, []any{int64(1) << 40, "some data", []byte("b"), uint(7), -3, 1.5, point{1, 2}}, reg))
	for _, h := range []string{"", "00", "01", "0114", "011480", "01148000", "0114ffffffffffffffffff02", "01300a61", "01300061", "0130ff"} {
		b, _ := hex.DecodeString(h)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast, ref Reader
		fast.Reset(b)
		ref.Reset(b)
		n, err := ref.Count()
		if err != nil {
			return
		}
		_, _ = fast.Count()
		for i := range n {
			k, s, err := fast.SkipScalar()
			rk := ref.Kind()
			var rs []byte
			var rerr error
			switch rk {
			case KindList, KindMap, KindUser:
			case KindString, KindBytes:
				rs, rerr = ref.StringBytes()
			default:
				rerr = ref.Skip()
			}
			if (err != nil) != (rerr != nil) {
				t.Fatalf("value %d: SkipScalar error %v, Kind+Skip error %v", i, err, rerr)
			}
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("value %d: error %v does not wrap ErrCorrupt", i, err)
				}
				return
			}
			if k != rk || !bytes.Equal(s, rs) || fast.Offset() != ref.Offset() {
				t.Fatalf("value %d: SkipScalar = %v %q at %d, Kind+Skip = %v %q at %d", i, k, s, fast.Offset(), rk, rs, ref.Offset())
			}
			if k == KindList || k == KindMap || k == KindUser {
				return
			}
		}
	})
}
