package tuple

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func deepList(depth int) any {
	var v any = "leaf"
	for i := 0; i < depth; i++ {
		v = []any{v}
	}
	return v
}

func deepMap(depth int) any {
	var v any = int8(1)
	for i := 0; i < depth; i++ {
		v = map[string]any{"k": v}
	}
	return v
}

// roundTripValues covers every kind with edge values.
func roundTripValues() []any {
	return []any{
		nil, true, false,
		int(0), int(math.MinInt64), int(math.MaxInt64), int(-1),
		int8(math.MinInt8), int8(math.MaxInt8), int8(0),
		int16(math.MinInt16), int16(math.MaxInt16),
		int32(math.MinInt32), int32(math.MaxInt32), int32(-7),
		int64(math.MinInt64), int64(math.MaxInt64), int64(63), int64(64), int64(-64), int64(-65),
		uint(0), uint(math.MaxUint64),
		uint8(0), uint8(math.MaxUint8), uint16(math.MaxUint16), uint32(math.MaxUint32),
		uint64(0), uint64(127), uint64(128), uint64(math.MaxUint64),
		float32(0), float32(math.Copysign(0, -1)), float32(math.MaxFloat32), float32(math.SmallestNonzeroFloat32),
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		float64(0), math.Copysign(0, -1), math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(0x7FF0000000000123), 3.14159,
		"", "a", "héllo, 世界 🐦", strings.Repeat("x", 200), string([]byte{0xff, 0xfe}), "nul\x00byte",
		[]byte{}, []byte{0, 1, 2, 255}, bytes.Repeat([]byte{0xab}, 20000),
		time.Unix(0, 0).UTC(), time.Unix(1700000000, 123456789).UTC(), time.Unix(-1, 999999999).UTC(),
		time.Time{}, time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 1, time.FixedZone("X", -7*3600)),
		time.Unix(maxUnixSec, 999999999), time.Unix(minUnixSec, 0),
		time.Duration(0), time.Duration(math.MinInt64), time.Duration(math.MaxInt64), -time.Second,
		[]any{}, []any{nil, int32(1), "two", []any{3.0, []byte("four")}},
		map[string]any{}, map[string]any{"": nil, "b": int16(2), "a": []any{map[string]any{"z": true}}, "ü": "x"},
		deepList(MaxDepth), deepMap(MaxDepth),
		point{1, -2}, blob{}, blob(bytes.Repeat([]byte{1}, 127)), blob(bytes.Repeat([]byte{2}, 128)),
		blob(bytes.Repeat([]byte{3}, 16383)), blob(bytes.Repeat([]byte{4}, 16384)),
		[]any{point{3, 4}, map[string]any{"p": point{5, 6}}},
	}
}

func TestRoundTripEveryKind(t *testing.T) {
	reg := testRegistry(t)
	for _, v := range roundTripValues() {
		b := mustAppend(t, v, reg)
		got, n, err := DecodeValue(b, reg)
		if err != nil {
			t.Fatalf("DecodeValue(%T %.60v) = %v; bytes %x", v, v, err, b[:min(len(b), 40)])
		}
		if n != len(b) {
			t.Errorf("%T %.60v: DecodeValue used %d of %d bytes", v, v, n, len(b))
		}
		if !Equal(v, got) {
			t.Errorf("round trip of %T %.60v gave %T %.60v", v, v, got, got)
		}
		// The encoding is canonical: re-encoding the decoded value gives the same bytes.
		if b2 := mustAppend(t, got, reg); !bytes.Equal(b, b2) {
			t.Errorf("%T %.60v: re-encoding differs:\n%x\n%x", v, v, b[:min(40, len(b))], b2[:min(40, len(b2))])
		}
	}
}

func TestRoundTripTuple(t *testing.T) {
	reg := testRegistry(t)
	vals := roundTripValues()
	b := mustAppendValues(t, vals, reg)
	got, err := DecodeValues(b, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	if !ValuesEqual(vals, got) {
		t.Fatalf("tuple round trip differs")
	}
	// DecodeValues appends to dst.
	prefix := []any{"keep"}
	got, err = DecodeValues(b, prefix, reg)
	if err != nil || len(got) != len(vals)+1 || got[0] != "keep" {
		t.Fatalf("DecodeValues with dst: len %d, err %v", len(got), err)
	}
	// Empty tuple.
	b = mustAppendValues(t, nil, reg)
	if !bytes.Equal(b, []byte{0}) {
		t.Fatalf("empty tuple encodes as %x, want 00", b)
	}
	got, err = DecodeValues(b, nil, reg)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty tuple decodes as %v, %v", got, err)
	}
}

func TestDecodedTypesAreExact(t *testing.T) {
	for _, v := range []any{int(1), int8(1), int16(1), int32(1), int64(1), uint(1), uint8(1), uint16(1),
		uint32(1), uint64(1), float32(1), float64(1), time.Duration(1), "1", []byte("1")} {
		got, _, err := DecodeValue(mustAppend(t, v, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%T", got) != fmt.Sprintf("%T", v) {
			t.Errorf("%T decoded as %T", v, got)
		}
	}
}

// TestGoldenEncodings pins the byte format documented in docs/tuple-format.md.
func TestGoldenEncodings(t *testing.T) {
	reg := testRegistry(t)
	for _, tc := range []struct {
		v    any
		want string
	}{
		{nil, "01"},
		{false, "02"},
		{true, "03"},
		{int(0), "1000"},
		{int(-1), "1001"},
		{int(1), "1002"},
		{int(-65), "108101"},
		{int8(-128), "11ff01"},
		{int16(300), "12d804"},
		{int32(math.MinInt32), "13ffffffff0f"},
		{int64(math.MaxInt64), "14feffffffffffffffff01"},
		{int64(math.MinInt64), "14ffffffffffffffffff01"},
		{uint(5), "1805"},
		{uint8(255), "19ff01"},
		{uint16(300), "1aac02"},
		{uint32(1 << 31), "1b8080808008"},
		{uint64(math.MaxUint64), "1cffffffffffffffffff01"},
		{float32(1.5), "200000c03f"},
		{math.Copysign(0, -1), "210000000000000080"},
		{1.0, "21000000000000f03f"},
		{"", "2800"},
		{"hé", "280368c3a9"},
		{[]byte{}, "2900"},
		{[]byte{0xde, 0xad}, "2902dead"},
		{time.Unix(1, 5), "300205"},
		{time.Unix(-1, 999999999), "3001ff93ebdc03"},
		{time.Duration(-2), "3103"},
		{time.Second, "3180a8d6b907"},
		{[]any{}, "3800"},
		{[]any{int64(1), "a"}, "380214022801" + "61"},
		{map[string]any{}, "3900"},
		{map[string]any{"b": nil, "a": true}, "390201610301" + "6201"},
		{point{1, 2}, "4002010801000000" + "02000000"},
		{blob{}, "40070000"},
		{blob(bytes.Repeat([]byte{0xee}, 128)), "4007008001" + strings.Repeat("ee", 128)},
	} {
		got := hex.EncodeToString(mustAppend(t, tc.v, reg))
		if got != tc.want {
			t.Errorf("%T %v encodes as %s, want %s", tc.v, tc.v, got, tc.want)
		}
	}
	// A tuple is a uvarint count followed by its values.
	got := hex.EncodeToString(mustAppendValues(t, []any{uint64(1), false, "x"}, reg))
	if want := "03" + "1c01" + "02" + "280178"; got != want {
		t.Errorf("tuple encodes as %s, want %s", got, want)
	}
}

func TestMapEncodingIsDeterministic(t *testing.T) {
	keys := []string{"delta", "alpha", "", "charlie", "bravo", "Zulu", "ä", "a", "aa", "echo", "foxtrot",
		"golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "november", "oscar"}
	// Build maps with several insertion orders; with >16 keys the sort
	// scratch overflows to the heap too.
	var first []byte
	for run := 0; run < 100; run++ {
		m := map[string]any{}
		for i := range keys {
			k := keys[(i*7+run)%len(keys)]
			m[k] = []any{k, map[string]any{"x": 0, k: int8(1)}}
		}
		b := mustAppendValues(t, []any{m, "tail"}, nil)
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatalf("run %d encoded differently", run)
		}
		h1, err := HashValues(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		h2, _ := HashValues(nil, m)
		if h1 != h2 {
			t.Fatal("map hash not deterministic")
		}
	}
	// Keys are in ascending byte order.
	var r Reader
	r.Reset(mustAppend(t, map[string]any{"b": 1, "a": 2, "ab": 3, "B": 4}, nil))
	n, err := r.MapLen()
	if err != nil || n != 4 {
		t.Fatal(n, err)
	}
	var got []string
	for i := 0; i < n; i++ {
		k, err := r.MapKey()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(k))
		if err := r.Skip(); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, ",") != "B,a,ab,b" {
		t.Fatalf("keys in order %v", got)
	}
}

func TestNilSlicesAndTimeNormalisation(t *testing.T) {
	for _, tc := range []struct{ in, want any }{
		{[]byte(nil), []byte{}},
		{[]any(nil), []any{}},
		{map[string]any(nil), map[string]any{}},
	} {
		got, _, err := DecodeValue(mustAppend(t, tc.in, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !Equal(got, tc.want) || got == nil {
			t.Errorf("%#v decoded as %#v", tc.in, got)
		}
	}
	loc := time.FixedZone("UTC+5", 5*3600)
	in := time.Date(2020, 1, 2, 3, 4, 5, 6, loc)
	got, _, err := DecodeValue(mustAppend(t, in, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	gt := got.(time.Time)
	if !gt.Equal(in) || gt.Location() != time.UTC {
		t.Errorf("time %v decoded as %v (%v)", in, gt, gt.Location())
	}
	// The same instant in two zones has one encoding.
	if !bytes.Equal(mustAppend(t, in, nil), mustAppend(t, in.UTC(), nil)) {
		t.Error("same instant in two zones encodes differently")
	}
	// Monotonic clock readings are dropped.
	now := time.Now()
	got, _, _ = DecodeValue(mustAppend(t, now, nil), nil)
	if !got.(time.Time).Equal(now) {
		t.Errorf("time.Now() %v decoded as %v", now, got)
	}
}

func TestDecodedBytesDoNotAlias(t *testing.T) {
	b := mustAppendValues(t, []any{"abc", []byte("def")}, nil)
	got, err := DecodeValues(b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0
	}
	if got[0] != "abc" || string(got[1].([]byte)) != "def" {
		t.Fatalf("decoded values changed with the buffer: %q", got)
	}
}

func TestUnsupportedType(t *testing.T) {
	type custom struct{ A int }
	dst := []byte{1, 2, 3}
	for _, v := range []any{custom{1}, &custom{}, []string{"a"}, map[string]string{}, map[int]any{},
		struct{}{}, complex(1, 2), uintptr(1), []any{1, custom{}}, map[string]any{"x": custom{}}} {
		out, err := AppendValue(dst, v, nil)
		if !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("%T: err %v, want ErrUnsupportedType", v, err)
			continue
		}
		if !bytes.Equal(out, []byte{1, 2, 3}) {
			t.Errorf("%T: dst changed on error: %x", v, out)
		}
		if !strings.Contains(err.Error(), "Registry.Register") {
			t.Errorf("error does not say how to fix: %v", err)
		}
		if _, err := HashValues(nil, v); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("HashValues(%T): err %v", v, err)
		}
	}
	_, err := AppendValue(nil, custom{}, nil)
	if !strings.Contains(err.Error(), "tuple.custom") {
		t.Errorf("error does not name the type: %v", err)
	}
	out, err := AppendValues([]byte{9}, []any{1, "a", complex64(1)}, nil)
	if !errors.Is(err, ErrUnsupportedType) || !bytes.Equal(out, []byte{9}) || !strings.Contains(err.Error(), "value 2") {
		t.Errorf("AppendValues: %x, %v", out, err)
	}
}

func TestNestingDepth(t *testing.T) {
	for _, v := range []any{deepList(MaxDepth), deepMap(MaxDepth)} {
		b := mustAppend(t, v, nil)
		if _, _, err := DecodeValue(b, nil); err != nil {
			t.Fatalf("depth %d: %v", MaxDepth, err)
		}
	}
	for _, v := range []any{deepList(MaxDepth + 1), deepMap(MaxDepth + 1)} {
		if _, err := AppendValue(nil, v, nil); !errors.Is(err, ErrTooDeep) {
			t.Errorf("AppendValue depth %d: %v, want ErrTooDeep", MaxDepth+1, err)
		}
		if _, err := HashValues(nil, v); !errors.Is(err, ErrTooDeep) {
			t.Errorf("HashValues depth %d: %v, want ErrTooDeep", MaxDepth+1, err)
		}
	}
	// A list that contains itself.
	self := []any{nil}
	self[0] = self
	if _, err := AppendValue(nil, self, nil); !errors.Is(err, ErrTooDeep) {
		t.Errorf("self-referencing list: %v", err)
	}
	m := map[string]any{}
	m["m"] = m
	if _, err := HashValues(nil, m); !errors.Is(err, ErrTooDeep) {
		t.Errorf("self-referencing map: %v", err)
	}
	// Hand-made encoding one level too deep.
	deep := append(bytes.Repeat([]byte{tagList, 1}, MaxDepth+1), tagNil)
	if _, _, err := DecodeValue(deep, nil); !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrTooDeep) {
		t.Errorf("decode too deep: %v", err)
	}
	var r Reader
	r.Reset(deep)
	if err := r.Skip(); !errors.Is(err, ErrTooDeep) {
		t.Errorf("skip too deep: %v", err)
	}
	if _, err := HashEncodedFields(append([]byte{1}, deep...), []int{0}); !errors.Is(err, ErrTooDeep) {
		t.Errorf("hash too deep: %v", err)
	}
}

func TestValueBounds(t *testing.T) {
	reg := testRegistry(t)
	vals := []any{"a", int64(300), []any{1, 2}, map[string]any{"k": "v"}, nil, point{1, 2}, 2.5}
	b := mustAppendValues(t, vals, reg)
	offs, err := ValueBounds(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != len(vals)+1 || offs[len(vals)] != int32(len(b)) {
		t.Fatalf("offsets %v for %d bytes", offs, len(b))
	}
	for i, v := range vals {
		got, n, err := DecodeValue(b[offs[i]:offs[i+1]], reg)
		if err != nil || n != int(offs[i+1]-offs[i]) || !Equal(got, v) {
			t.Errorf("value %d: %v (%d bytes), %v", i, got, n, err)
		}
	}
	// User values are bounded without their codec.
	if _, err := ValueBounds(b, nil); err != nil {
		t.Fatal(err)
	}
	// Appends to offs and does not allocate when it has capacity.
	buf := make([]int32, 1, 16)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ValueBounds(b, buf[:1]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ValueBounds allocates %v times", allocs)
	}
	offs, _ = ValueBounds(b, buf[:1])
	if len(offs) != len(vals)+2 {
		t.Errorf("ValueBounds did not append: %v", offs)
	}
}
