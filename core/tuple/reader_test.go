package tuple

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestReaderTypedFields(t *testing.T) {
	reg := testRegistry(t)
	ts := time.Unix(1700000000, 42).UTC()
	b := mustAppendValues(t, []any{
		"word", int32(-5), uint64(math.MaxUint64), float32(0.5), 2.25, true, nil, ts, 3 * time.Second,
		[]byte("raw"), []any{int8(1), "x"}, map[string]any{"a": 1, "b": []any{}}, point{9, 10}, uint8(200),
	}, reg)
	var r Reader
	r.Reset(b)
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	n, err := r.Count()
	check(err)
	if n != 14 {
		t.Fatalf("count %d", n)
	}
	if r.Kind() != KindString {
		t.Fatalf("kind %v", r.Kind())
	}
	s, err := r.StringBytes()
	check(err)
	if string(s) != "word" {
		t.Fatalf("string %q", s)
	}
	if r.Kind() != KindInt32 || !r.Kind().IsSigned() {
		t.Fatalf("kind %v", r.Kind())
	}
	// Wrong kind leaves the position unchanged.
	if _, err := r.StringBytes(); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("StringBytes on int32: %v", err)
	}
	if _, err := r.Uint(); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("Uint on -5: %v", err)
	}
	i, err := r.Int()
	check(err)
	if i != -5 {
		t.Fatalf("int %d", i)
	}
	if _, err := r.Int(); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("Int on MaxUint64: %v", err)
	}
	u, err := r.Uint()
	check(err)
	if u != math.MaxUint64 {
		t.Fatalf("uint %d", u)
	}
	f, err := r.Float()
	check(err)
	if f != 0.5 {
		t.Fatalf("float32 %v", f)
	}
	f, err = r.Float()
	check(err)
	if f != 2.25 {
		t.Fatalf("float64 %v", f)
	}
	bl, err := r.Bool()
	check(err)
	if !bl {
		t.Fatal("bool")
	}
	check(r.Nil())
	gt, err := r.Time()
	check(err)
	if !gt.Equal(ts) {
		t.Fatalf("time %v", gt)
	}
	d, err := r.Duration()
	check(err)
	if d != 3*time.Second {
		t.Fatalf("duration %v", d)
	}
	str, err := r.StringValue()
	check(err)
	if str != "raw" {
		t.Fatalf("bytes as string %q", str)
	}
	ln, err := r.ListLen()
	check(err)
	if ln != 2 {
		t.Fatalf("list len %d", ln)
	}
	i, err = r.Int()
	check(err)
	raw, err := r.Raw()
	check(err)
	if i != 1 || string(raw) != "\x28\x01x" {
		t.Fatalf("list elements %d %q", i, raw)
	}
	mn, err := r.MapLen()
	check(err)
	k, err := r.MapKey()
	check(err)
	i, err = r.Int()
	check(err)
	if mn != 2 || string(k) != "a" || i != 1 {
		t.Fatalf("map %d %q %d", mn, k, i)
	}
	_, err = r.MapKey()
	check(err)
	check(r.Skip())
	if r.Kind() != KindUser {
		t.Fatalf("kind %v", r.Kind())
	}
	id, payload, err := r.User()
	check(err)
	if id != pointID || len(payload) != 8 {
		t.Fatalf("user %d %x", id, payload)
	}
	v, err := r.Value(reg)
	check(err)
	if v != uint8(200) {
		t.Fatalf("value %v", v)
	}
	if !r.Done() || r.Kind() != KindInvalid || r.Remaining() != 0 || r.Offset() != len(b) {
		t.Fatalf("not at end: %d of %d", r.Offset(), len(b))
	}
	if _, err := r.Int(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read past end: %v", err)
	}
}

func TestReaderWrongKinds(t *testing.T) {
	var r Reader
	r.Reset(mustAppend(t, "s", nil))
	for name, f := range map[string]func() error{
		"Nil":      func() error { return r.Nil() },
		"Bool":     func() error { _, err := r.Bool(); return err },
		"Int":      func() error { _, err := r.Int(); return err },
		"Uint":     func() error { _, err := r.Uint(); return err },
		"Float":    func() error { _, err := r.Float(); return err },
		"Time":     func() error { _, err := r.Time(); return err },
		"Duration": func() error { _, err := r.Duration(); return err },
		"ListLen":  func() error { _, err := r.ListLen(); return err },
		"MapLen":   func() error { _, err := r.MapLen(); return err },
		"User":     func() error { _, _, err := r.User(); return err },
	} {
		if err := f(); !errors.Is(err, ErrWrongKind) {
			t.Errorf("%s on a string: %v", name, err)
		}
		if r.Offset() != 0 {
			t.Fatalf("%s moved the reader", name)
		}
	}
	r.Reset([]byte{0xee})
	if _, err := r.Int(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("unknown tag: %v", err)
	}
	var zero Reader
	if !zero.Done() || zero.Kind() != KindInvalid {
		t.Error("zero reader not empty")
	}
	if KindMap.String() != "map[string]any" || Kind(200).String() != "Kind(200)" || !KindUint8.IsUnsigned() {
		t.Error("Kind strings")
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	vals := []any{nil, true, int(-12345), int8(-1), int16(300), int32(70000), int64(math.MinInt64),
		uint(7), uint8(200), uint16(65535), uint32(1 << 31), uint64(math.MaxUint64), float32(1.5), 2.5,
		"a string of some length", []byte("bytes"), time.Unix(1700000000, 5), 5 * time.Millisecond,
		[]any{int64(1), "two", 3.0}, map[string]any{"b": 1, "a": "x"}}
	buf := make([]byte, 0, 4096)
	for _, v := range vals {
		if allocs := testing.AllocsPerRun(100, func() {
			if _, err := AppendValue(buf[:0], v, nil); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Errorf("AppendValue(%T) allocates %v times", v, allocs)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() {
		if _, err := AppendValues(buf[:0], vals, nil); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("AppendValues allocates %v times", allocs)
	}
}

func TestReaderDoesNotAllocate(t *testing.T) {
	b := mustAppendValues(t, []any{"key", int64(123456), uint32(9), 1.5, true, nil,
		time.Unix(1700000000, 5), time.Second, []any{1, "x"}, map[string]any{"k": []byte("v")}, float32(2)}, nil)
	var r Reader
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(b)
		if n, err := r.Count(); err != nil || n != 11 {
			t.Fatal(n, err)
		}
		_, err1 := r.StringBytes()
		_, err2 := r.Int()
		_, err3 := r.Uint()
		_, err4 := r.Float()
		_, err5 := r.Bool()
		err6 := r.Nil()
		_, err7 := r.Time()
		_, err8 := r.Duration()
		_, err9 := r.ListLen()
		err10 := r.Skip()
		_, err11 := r.Raw()
		_, err12 := r.MapLen()
		_, err13 := r.MapKey()
		_, err14 := r.StringBytes()
		_, err15 := r.Float()
		if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8, err9, err10, err11, err12, err13, err14, err15); err != nil || !r.Done() {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Reader allocates %v times", allocs)
	}
}
