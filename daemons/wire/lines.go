package wire

import "unsafe"

// lineBytes is what CacheLineSlice fills: two 64-byte cache lines, the
// pair that x86's adjacent-line prefetcher fetches together.
const lineBytes = 128

// CacheLineSlice returns an empty slice whose backing array fills at
// least 128 bytes. For elements whose size divides 128 (pointers,
// strings) it is exactly 128 bytes, which the Go allocator places
// 128-byte aligned: no other object shares its cache lines. It is for
// small slices of pointers that goroutines on different cores write for
// every batch or tuple (a queue's items, a writer's popped batch, an
// emitter's anchors). Left to grow from nothing, such a slice is an 8- or
// 16-byte object, and an unrelated small object of the same size class on
// its cache line (measured: a bolt's map directory) then misses the cache
// on every access (false sharing; see docs/benchmarks.md, issue 18 fifth
// round).
func CacheLineSlice[T any]() []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if size == 0 {
		return nil
	}
	return make([]T, 0, max(1, (lineBytes+size-1)/size))
}
