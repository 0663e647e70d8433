package tuple

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// point is a user type with a fixed 8-byte payload.
type point struct{ X, Y int32 }

type pointCodec struct{}

func (pointCodec) Append(dst []byte, v any) ([]byte, error) {
	p, ok := v.(point)
	if !ok {
		return dst, fmt.Errorf("pointCodec: got %T", v)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(p.X))
	return binary.LittleEndian.AppendUint32(dst, uint32(p.Y)), nil
}

func (pointCodec) Decode(b []byte) (any, error) {
	if len(b) != 8 {
		return nil, fmt.Errorf("pointCodec: payload of %d bytes, want 8", len(b))
	}
	return point{int32(binary.LittleEndian.Uint32(b)), int32(binary.LittleEndian.Uint32(b[4:]))}, nil
}

// blob is a user type whose payload is its bytes, of any length.
type blob []byte

type blobCodec struct{}

func (blobCodec) Append(dst []byte, v any) ([]byte, error) { return append(dst, v.(blob)...), nil }
func (blobCodec) Decode(b []byte) (any, error)             { return blob(append([]byte{}, b...)), nil }

// failing is a user type whose codec always fails.
type failing struct{}

type failingCodec struct{}

var errFailing = errors.New("failing codec")

func (failingCodec) Append(dst []byte, v any) ([]byte, error) { return dst, errFailing }
func (failingCodec) Decode(b []byte) (any, error)             { return nil, errFailing }

const (
	pointID   = 0x0102
	blobID    = 7
	failingID = 9
)

func testRegistry(t testing.TB) *Registry {
	t.Helper()
	reg := NewRegistry()
	for _, r := range []struct {
		id    uint16
		v     any
		codec Codec
	}{{pointID, point{}, pointCodec{}}, {blobID, blob(nil), blobCodec{}}, {failingID, failing{}, failingCodec{}}} {
		if err := reg.Register(r.id, r.v, r.codec); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func mustAppend(t testing.TB, v any, reg *Registry) []byte {
	t.Helper()
	b, err := AppendValue(nil, v, reg)
	if err != nil {
		t.Fatalf("AppendValue(%#v): %v", v, err)
	}
	return b
}

func mustAppendValues(t testing.TB, vals []any, reg *Registry) []byte {
	t.Helper()
	b, err := AppendValues(nil, vals, reg)
	if err != nil {
		t.Fatalf("AppendValues(%#v): %v", vals, err)
	}
	return b
}
