package pebble_test

import (
	"math"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"

	"github.com/egret-stream/egret/statebackends/pebble"
	"github.com/egret-stream/egret/statebackends/statebackendtest"
)

func TestConformance(t *testing.T) {
	statebackendtest.Suite{Name: pebble.Name}.Run(t)
}

func BenchmarkBackend(b *testing.B) {
	statebackendtest.Suite{Name: pebble.Name}.Bench(b)
}

func TestMemoryFollowsTheGoLimit(t *testing.T) {
	for _, c := range []struct {
		limit           int64
		cache, memTable int64
	}{
		{math.MaxInt64, 32 << 20, 4 << 20},
		{1 << 30, 32 << 20, 4 << 20},
		{64 << 20, 8 << 20, 4 << 20},
		{16 << 20, 2 << 20, 2 << 20},
		{4 << 20, 1 << 20, 1 << 20},
	} {
		cache, memTable := pebble.Memory(c.limit)
		if cache != c.cache || memTable != c.memTable {
			t.Errorf("GOMEMLIMIT %d: cache %d, memtable %d; want %d, %d", c.limit, cache, memTable, c.cache, c.memTable)
		}
	}
}

// TestReservesItsMemory: an open backend takes its cache and memtables out
// of the Go memory limit, and gives them back when closed.
func TestReservesItsMemory(t *testing.T) {
	const limit = 64 << 20
	old := debug.SetMemoryLimit(limit)
	defer debug.SetMemoryLimit(old)
	b, err := statebackend.Open(pebble.Name, statebackend.Options{Dir: filepath.Join(t.TempDir(), "db"), MaxParallelism: 4, Groups: keygroup.Range{Start: 0, End: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != limit-(8<<20+2*4<<20) {
		t.Errorf("Go memory limit with the backend open: %d, want %d", got, limit-(8<<20+2*4<<20))
	}
	if err := b.Clear(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("Go memory limit after Close: %d, want %d", got, limit)
	}
}
