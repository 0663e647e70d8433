package tuple

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

// TestHashGolden pins the fields-grouping hash. A change to any of these
// values changes how every topology routes its keys: it must never happen
// by accident.
func TestHashGolden(t *testing.T) {
	reg := testRegistry(t)
	for _, tc := range []struct {
		vals []any
		want string
	}{
		{[]any{}, "ef46db3751d8e999"}, // XXH64 of empty input, seed 0
		{[]any{nil}, "e934a84adb052768"},
		{[]any{false}, "dd8f621dbf7f57f1"},
		{[]any{true}, "52fc4823a13c997a"},
		{[]any{0}, "ef03f80c2f2a1026"},
		{[]any{7}, "3663095ddc461a3c"},
		{[]any{-1}, "0c72a2d6abb7c8ff"},
		{[]any{int64(math.MinInt64)}, "7b1f4ed8978445b4"},
		{[]any{uint64(math.MaxUint64)}, "c4125f91876b4e50"},
		{[]any{1.5}, "e61612a10904c397"},
		{[]any{math.NaN()}, "280308856b409770"},
		{[]any{""}, "0e813e63735e711e"},
		{[]any{"user-42"}, "a42e744e0b6a7059"},
		{[]any{"héllo, 世界"}, "e278f21b8d066c3b"},
		{[]any{strings.Repeat("long key ", 40)}, "2fe19f7478a806ca"},
		{[]any{time.Unix(1700000000, 123456789)}, "898aeffb5ad33de1"},
		{[]any{time.Second}, "205455ea7d24bb78"},
		{[]any{[]any{1, "a"}}, "afa935d52435ffba"},
		{[]any{map[string]any{"b": 2, "a": 1}}, "b908e76e7aa1126c"},
		{[]any{point{1, 2}}, "d7e6e282093e1b9e"},
		{[]any{"user-42", 7}, "ceef07c9c91ee761"},
		{[]any{7, "user-42"}, "dfa26d0cf9cbd1c6"},
		{[]any{"a", "b", "c", int8(1), 2.5, true, nil}, "d544fa4c8be6af65"},
	} {
		h, err := HashValues(reg, tc.vals...)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%016x", h); got != tc.want {
			t.Errorf("HashValues(%v) = %s, want %s", tc.vals, got, tc.want)
		}
	}
}

// canon builds the canonical hash input of v by hand, following docs/tuple-format.md
// literally, as an independent check of the hasher.
func canon(t *testing.T, v any, reg *Registry) []byte {
	u64 := func(c byte, x uint64) []byte { return binary.LittleEndian.AppendUint64([]byte{c}, x) }
	switch x := v.(type) {
	case nil:
		return []byte{0}
	case bool:
		if x {
			return []byte{1, 1}
		}
		return []byte{1, 0}
	case int:
		return u64(2, uint64(x))
	case int8:
		return u64(2, uint64(x))
	case int16:
		return u64(2, uint64(x))
	case int32:
		return u64(2, uint64(x))
	case int64:
		return u64(2, uint64(x))
	case uint:
		return canon(t, uint64(x), reg)
	case uint8:
		return u64(2, uint64(x))
	case uint16:
		return u64(2, uint64(x))
	case uint32:
		return u64(2, uint64(x))
	case uint64:
		if x > math.MaxInt64 {
			return u64(3, x)
		}
		return u64(2, x)
	case float32:
		return canon(t, float64(x), reg)
	case float64:
		switch {
		case x == 0:
			return u64(4, 0)
		case math.IsNaN(x):
			return u64(4, 0x7FF8000000000000)
		}
		return u64(4, math.Float64bits(x))
	case string:
		return append(u64(5, uint64(len(x))), x...)
	case []byte:
		return append(u64(5, uint64(len(x))), x...)
	case time.Time:
		return binary.LittleEndian.AppendUint32(u64(6, uint64(x.Unix())), uint32(x.Nanosecond()))
	case time.Duration:
		return u64(7, uint64(x))
	case []any:
		out := u64(8, uint64(len(x)))
		for _, e := range x {
			out = append(out, canon(t, e, reg)...)
		}
		return out
	case map[string]any:
		out := u64(9, uint64(len(x)))
		for _, k := range sortedKeys(x, nil) {
			out = append(out, canon(t, k, reg)...)
			out = append(out, canon(t, x[k], reg)...)
		}
		return out
	}
	// A user value: its encoding is tag, id (2 bytes), uvarint length, payload.
	enc := mustAppend(t, v, reg)
	_, payload, _, err := readUser(enc, 1)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint16([]byte{0x0A}, binary.LittleEndian.Uint16(enc[1:]))
	out = binary.LittleEndian.AppendUint64(out, uint64(len(payload)))
	return append(out, payload...)
}

// TestHashMatchesDefinition checks the hasher, from values and from
// encoded bytes, against the canonical input built by hand, for every kind.
func TestHashMatchesDefinition(t *testing.T) {
	reg := testRegistry(t)
	vals := roundTripValues()
	enc := mustAppendValues(t, vals, reg)
	for i, v := range vals {
		want := xxhash.Sum64(canon(t, v, reg))
		got, err := HashValues(reg, v)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("HashValues(%T %.40v) = %x, want %x", v, v, got, want)
		}
		if k, err := AppendKey([]byte("pre"), reg, v); err != nil || !bytes.Equal(k, append([]byte("pre"), canon(t, v, reg)...)) {
			t.Errorf("AppendKey(%T %.40v) = %x, %v; want the canonical input", v, v, k, err)
		}
		got, err = HashEncodedFields(enc, []int{i})
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("HashEncodedFields(%T %.40v) = %x, want %x", v, v, got, want)
		}
	}
	// Several fields, in the order given (not tuple order), cross the
	// 128-byte buffer in every way.
	fields := []int{5, 3, 60, 0, 44, 1, 70, 71, 50, 8, 65}
	var all []byte
	sel := make([]any, 0, len(fields))
	for _, f := range fields {
		all = append(all, canon(t, vals[f], reg)...)
		sel = append(sel, vals[f])
	}
	want := xxhash.Sum64(all)
	if got, err := FieldsHash(reg, vals, fields); err != nil || got != want {
		t.Errorf("FieldsHash = %x, %v; want %x", got, err, want)
	}
	if got, err := HashValues(reg, sel...); err != nil || got != want {
		t.Errorf("HashValues = %x, %v; want %x", got, err, want)
	}
	if got, err := HashEncodedFields(enc, fields); err != nil || got != want {
		t.Errorf("HashEncodedFields = %x, %v; want %x", got, err, want)
	}
	if k, err := AppendFieldsKey(nil, reg, vals, fields); err != nil || !bytes.Equal(k, all) {
		t.Errorf("AppendFieldsKey = %x, %v; want the canonical input", k, err)
	}
	if k, err := AppendKey(nil, reg, sel...); err != nil || !bytes.Equal(k, all) {
		t.Errorf("AppendKey = %x, %v; want the canonical input", k, err)
	}
	if _, err := AppendFieldsKey(nil, reg, vals, []int{len(vals)}); err == nil {
		t.Error("AppendFieldsKey of a field out of range succeeded")
	}
	// Every prefix length of a long string key, around the buffer size.
	for n := 100; n < 300; n++ {
		s := strings.Repeat("k", n)
		want := xxhash.Sum64(append(append(canon(t, 7, nil), canon(t, s, nil)...), canon(t, []byte(s), nil)...))
		got, _ := HashValues(nil, 7, s, []byte(s))
		if k, _ := AppendKey(nil, nil, 7, s, []byte(s)); xxhash.Sum64(k) != want {
			t.Fatalf("AppendKey of a string of %d bytes does not hash as the key", n)
		}
		if got != want {
			t.Fatalf("string of %d bytes: %x, want %x", n, got, want)
		}
	}
}

// FieldsHash of one string or integer field (hashed without a hasher)
// follows the definition at every string length and for integers of every
// size and sign.
func TestFieldsHashOneField(t *testing.T) {
	one := []int{0}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= shortKeyMax+20; n++ {
		for range 20 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			s := string(b)
			want := xxhash.Sum64(canon(t, s, nil))
			if got, err := FieldsHash(nil, []any{s}, one); err != nil || got != want {
				t.Fatalf("string %x (%d bytes): %x, %v; want %x", b, n, got, err, want)
			}
		}
	}
	for _, v := range []int64{0, 1, -1, 127, 128, -129, 1 << 40, -1 << 40, math.MaxInt64, math.MinInt64} {
		want := xxhash.Sum64(canon(t, v, nil))
		for _, x := range []any{v, int(v)} {
			if got, err := FieldsHash(nil, []any{"other", x}, []int{1}); err != nil || got != want {
				t.Fatalf("FieldsHash(%T %d) = %x, %v; want %x", x, v, got, err, want)
			}
		}
	}
}

func TestHashLogicalEquality(t *testing.T) {
	same := [][]any{
		{int(7), int8(7), int16(7), int32(7), int64(7), uint(7), uint8(7), uint16(7), uint32(7), uint64(7)},
		{int(-3), int8(-3), int16(-3), int32(-3), int64(-3)},
		{uint64(math.MaxInt64), int64(math.MaxInt64), int(math.MaxInt64)},
		{"ab", []byte("ab")},
		{0.0, math.Copysign(0, -1), float32(0), float32(math.Copysign(0, -1))},
		{math.NaN(), float32(math.NaN()), math.Float64frombits(0x7FF0000000000001), math.Float64frombits(0xFFF8000000000000)},
		{1.5, float32(1.5)},
		{time.Unix(5, 6).UTC(), time.Unix(5, 6).In(time.FixedZone("x", 3600))},
		{[]any{1, "a"}, []any{uint8(1), []byte("a")}},
		{map[string]any{"a": 1, "b": 2}, map[string]any{"b": int32(2), "a": uint16(1)}},
	}
	for _, group := range same {
		h0, err := HashValues(nil, group[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range group[1:] {
			if h, _ := HashValues(nil, v); h != h0 {
				t.Errorf("%T %v hashes differently from %T %v", v, v, group[0], group[0])
			}
		}
	}
	different := []any{nil, false, true, 0, 1, -1, uint64(math.MaxUint64), 1.0, 0.0, "", "1", time.Duration(1),
		time.Unix(0, 1), time.Unix(1, 0), []any{}, map[string]any{}, []any{1}, map[string]any{"1": nil}, []any{nil}}
	seen := map[uint64]any{}
	for _, v := range different {
		h, err := HashValues(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[h]; dup {
			t.Errorf("%T %v and %T %v hash the same", v, v, prev, prev)
		}
		seen[h] = v
	}
	// Field boundaries matter: ("ab","c") and ("a","bc") differ.
	h1, _ := HashValues(nil, "ab", "c")
	h2, _ := HashValues(nil, "a", "bc")
	if h1 == h2 {
		t.Error("field boundaries are not part of the hash")
	}
}

func TestHashErrors(t *testing.T) {
	vals := []any{1, 2}
	if _, err := FieldsHash(nil, vals, []int{2}); err == nil {
		t.Error("FieldsHash out of range")
	}
	if _, err := FieldsHash(nil, vals, []int{-1}); err == nil {
		t.Error("FieldsHash negative")
	}
	enc := mustAppendValues(t, vals, nil)
	if _, err := HashEncodedFields(enc, []int{2}); err == nil {
		t.Error("HashEncodedFields out of range")
	}
	// More values than the stack offsets hold still work.
	many := make([]any, 100)
	for i := range many {
		many[i] = i
	}
	enc = mustAppendValues(t, many, nil)
	h1, err1 := HashEncodedFields(enc, []int{99, 40})
	h2, err2 := HashValues(nil, 99, 40)
	if err1 != nil || err2 != nil || h1 != h2 {
		t.Errorf("wide tuple: %x %v, %x %v", h1, err1, h2, err2)
	}
}

func TestHashDoesNotAllocate(t *testing.T) {
	tuple := []any{"user-42", int64(7), uint8(1), 2.5, true, nil, time.Unix(5, 6), time.Second,
		[]byte("b"), strings.Repeat("a long key that crosses the hash buffer ", 5), []any{1, "x"}, map[string]any{"k": 1}}
	fields := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	enc := mustAppendValues(t, tuple, nil)
	if a := testing.AllocsPerRun(100, func() {
		if _, err := FieldsHash(nil, tuple, fields); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("FieldsHash allocates %v times", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		if _, err := HashValues(nil, tuple...); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("HashValues allocates %v times", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		if _, err := HashEncodedFields(enc, fields); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("HashEncodedFields allocates %v times", a)
	}
}
