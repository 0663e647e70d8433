package tuple

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestRegistryErrors(t *testing.T) {
	reg := NewRegistry()
	if err := reg.Register(1, point{}, pointCodec{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		id     uint16
		sample any
		codec  Codec
	}{
		{"duplicate id", 1, blob{}, blobCodec{}},
		{"duplicate type", 2, point{}, pointCodec{}},
		{"duplicate type by reflect.Type", 3, reflect.TypeOf(point{}), pointCodec{}},
		{"nil codec", 4, blob{}, nil},
		{"nil sample", 5, nil, blobCodec{}},
		{"built-in string", 6, "", blobCodec{}},
		{"built-in time", 7, time.Time{}, blobCodec{}},
		{"built-in list", 8, []any{}, blobCodec{}},
	} {
		if err := reg.Register(tc.id, tc.sample, tc.codec); !errors.Is(err, ErrRegistry) {
			t.Errorf("%s: %v, want ErrRegistry", tc.name, err)
		}
	}
	var nilReg *Registry
	if err := nilReg.Register(1, point{}, pointCodec{}); !errors.Is(err, ErrRegistry) {
		t.Errorf("nil registry: %v", err)
	}
	// The zero Registry works, and reflect.Type samples register pointers.
	var zero Registry
	if err := zero.Register(10, reflect.TypeOf(&point{}), ptrPointCodec{}); err != nil {
		t.Fatal(err)
	}
	b, err := AppendValue(nil, &point{7, 8}, &zero)
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := DecodeValue(b, &zero)
	if err != nil || *(v.(*point)) != (point{7, 8}) {
		t.Fatalf("pointer type round trip: %v, %v", v, err)
	}
	// point (not *point) is not registered in zero.
	if _, err := AppendValue(nil, point{}, &zero); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("unregistered value type: %v", err)
	}
}

type ptrPointCodec struct{}

func (ptrPointCodec) Append(dst []byte, v any) ([]byte, error) {
	return pointCodec{}.Append(dst, *v.(*point))
}

func (ptrPointCodec) Decode(b []byte) (any, error) {
	v, err := pointCodec{}.Decode(b)
	if err != nil {
		return nil, err
	}
	p := v.(point)
	return &p, nil
}

// TestRegistryConcurrent registers while other goroutines encode (run with
// -race).
func TestRegistryConcurrent(t *testing.T) {
	reg := NewRegistry()
	if err := reg.Register(1, point{}, pointCodec{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 64)
			for i := 0; i < 200; i++ {
				b, err := AppendValue(buf[:0], point{int32(i), 1}, reg)
				if err != nil {
					t.Error(err)
					return
				}
				if _, _, err := DecodeValue(b, reg); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for id := uint16(100); id < 150; id++ {
		// Distinct types via arrays of different lengths.
		typ := reflect.ArrayOf(int(id), reflect.TypeOf(byte(0)))
		if err := reg.Register(id, typ, blobCodec{}); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
}
