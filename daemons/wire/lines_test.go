package wire

import (
	"testing"
	"unsafe"
)

// TestCacheLineSlice: pointer and string slices get a backing array of
// exactly 128 bytes at a 128-byte boundary, so no other object shares its
// cache lines.
func TestCacheLineSlice(t *testing.T) {
	check := func(name string, capBytes int, addr uintptr) {
		t.Helper()
		if capBytes != lineBytes || addr%lineBytes != 0 {
			t.Errorf("%s: %d bytes at %#x, want %d bytes %d-byte aligned", name, capBytes, addr, lineBytes, lineBytes)
		}
	}
	for range 100 { // several allocations: not one lucky address
		p := CacheLineSlice[*Batch]()
		check("[]*Batch", cap(p)*int(unsafe.Sizeof(p[:1][0])), uintptr(unsafe.Pointer(unsafe.SliceData(p))))
		s := CacheLineSlice[string]()
		check("[]string", cap(s)*int(unsafe.Sizeof(s[:1][0])), uintptr(unsafe.Pointer(unsafe.SliceData(s))))
	}
	if b := CacheLineSlice[[100]byte](); cap(b) != 2 || len(b) != 0 {
		t.Errorf("[100]byte: len %d cap %d, want 0 and 2", len(b), cap(b))
	}
	if z := CacheLineSlice[struct{}](); z != nil {
		t.Errorf("struct{}: %v, want nil", z)
	}
}
