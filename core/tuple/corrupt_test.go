package tuple

import (
	"encoding/hex"
	"errors"
	"runtime"
	"testing"
)

// decodeAll runs every decode entry point over a tuple encoding and returns
// their errors by name.
func decodeAll(b []byte, reg *Registry) map[string]error {
	errs := map[string]error{}
	_, errs["DecodeValues"] = DecodeValues(b, nil, reg)
	_, errs["ValueBounds"] = ValueBounds(b, nil)
	_, errs["HashEncodedFields"] = HashEncodedFields(b, []int{0})
	var r Reader
	r.Reset(b)
	errs["Reader"] = func() error {
		n, err := r.Count()
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := r.Skip(); err != nil {
				return err
			}
		}
		if !r.Done() {
			return ErrCorrupt
		}
		return nil
	}()
	return errs
}

func TestCorruptInput(t *testing.T) {
	reg := testRegistry(t)
	for _, tc := range []struct{ name, hex string }{
		{"empty", ""},
		{"count without values", "01"},
		{"count larger than input", "05" + "01"},
		{"huge count", "ffffffffffffffffff01"},
		{"trailing bytes", "01" + "01" + "01"},
		{"zero tag", "01" + "00"},
		{"unknown tag", "01" + "ff"},
		{"truncated varint", "01" + "1080"},
		{"varint too long", "01" + "10ffffffffffffffffffff01"},
		{"varint overflows", "01" + "1cffffffffffffffffff02"},
		{"non-minimal varint", "01" + "108000"},
		{"non-minimal count", "8000"},
		{"int8 out of range", "01" + "118002"},
		{"int16 out of range", "01" + "1280800401"},
		{"int32 out of range", "01" + "138080808010"},
		{"uint8 out of range", "01" + "198002"},
		{"uint16 out of range", "01" + "1a808004"},
		{"uint32 out of range", "01" + "1b8080808010"},
		{"truncated float32", "01" + "20000000"},
		{"truncated float64", "01" + "2100000000000000"},
		{"string longer than input", "01" + "2805616263"},
		{"hostile string length", "01" + "28ffffffff0f"},
		{"bytes longer than input", "01" + "2903aa"},
		{"time nanos out of range", "01" + "300080943deb03"},
		{"time truncated", "01" + "3002"},
		{"time seconds out of range", "01" + "30feffffffffffffffff0100"},
		{"list longer than input", "01" + "380301"},
		{"hostile list length", "01" + "38ffffffffffffffff7f"},
		{"map longer than input", "01" + "3902016101"},
		{"map with odd bytes", "01" + "39010161"},
		{"map keys unsorted", "01" + "3902016201" + "016101"},
		{"map keys duplicate", "01" + "3902016101" + "016101"},
		{"map key truncated", "01" + "390105"},
		{"user truncated id", "01" + "4001"},
		{"user payload too long", "01" + "4007000501"},
		{"nested truncation", "01" + "38023802" + "01"},
	} {
		b, err := hex.DecodeString(tc.hex)
		if err != nil {
			t.Fatal(err)
		}
		for name, err := range decodeAll(b, reg) {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: %s: err %v, want ErrCorrupt", tc.name, name, err)
			}
		}
	}
}

// TestEveryTruncationFails cuts a valid tuple at every length: each prefix
// must fail cleanly everywhere, never panic.
func TestEveryTruncationFails(t *testing.T) {
	reg := testRegistry(t)
	var small []any // every kind, but not the long values: the test is quadratic
	for _, v := range roundTripValues() {
		if len(mustAppend(t, v, reg)) < 300 {
			small = append(small, v)
		}
	}
	b := mustAppendValues(t, small, reg)
	if _, err := DecodeValues(b, nil, reg); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(b); n++ {
		for name, err := range decodeAll(b[:n], reg) {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("prefix of %d bytes: %s: err %v, want ErrCorrupt", n, name, err)
			}
		}
	}
}

func TestHostileLengthDoesNotAllocate(t *testing.T) {
	// Lists, maps and strings claiming 2^62 elements must fail before
	// allocating anything large: only the error is allocated.
	for _, h := range []string{"01" + "3880808080808080804001", "01" + "3980808080808080804001",
		"01" + "2880808080808080804001", "01" + "2980808080808080804001"} {
		b, _ := hex.DecodeString(h)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 0; i < 10; i++ {
			if _, err := DecodeValues(b, nil, nil); !errors.Is(err, ErrCorrupt) {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 10*4096 {
			t.Errorf("%s: %d bytes allocated for 10 hostile inputs", h, n)
		}
	}
}

func TestUserValueErrors(t *testing.T) {
	reg := testRegistry(t)
	b := mustAppendValues(t, []any{point{1, 2}}, reg)
	// Without the codec: the value can be skipped, bounded and hashed but
	// not decoded.
	if _, err := DecodeValues(b, nil, nil); !errors.Is(err, ErrNoCodec) {
		t.Errorf("decode without codec: %v, want ErrNoCodec", err)
	}
	if _, err := DecodeValues(b, nil, NewRegistry()); !errors.Is(err, ErrNoCodec) {
		t.Errorf("decode with empty registry: %v, want ErrNoCodec", err)
	}
	for name, err := range decodeAll(b, nil) {
		if name != "DecodeValues" && err != nil {
			t.Errorf("%s without codec: %v", name, err)
		}
	}
	// A codec that rejects the payload.
	bad, _ := hex.DecodeString("01" + "4002010100")
	if _, err := DecodeValues(bad, nil, reg); err == nil {
		t.Error("bad payload decoded")
	}
	// A codec that fails to encode.
	if _, err := AppendValue(nil, failing{}, reg); !errors.Is(err, errFailing) {
		t.Errorf("failing codec: %v", err)
	}
	if _, err := HashValues(reg, failing{}); !errors.Is(err, errFailing) {
		t.Errorf("failing codec hash: %v", err)
	}
	failB, _ := hex.DecodeString("4009000100")
	if _, _, err := DecodeValue(failB, reg); !errors.Is(err, errFailing) {
		t.Errorf("failing codec decode: %v", err)
	}
}
