package acking

import (
	"errors"
	"testing"

	"github.com/egret-stream/egret/daemons/wire"
)

func newLedger(t testing.TB, buckets, capacity int) *Ledger {
	t.Helper()
	l, err := New(buckets, capacity)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestTreeCompletes(t *testing.T) {
	l := newLedger(t, 3, 0)
	r := wire.Root{Task: 1, ID: 42}
	// The spout sends two copies (edges a, b); the bolt receiving a emits
	// c anchored on a and acks a; the others ack their inputs.
	a, b, c := uint64(0x1111), uint64(0x2222), uint64(0x4444)
	if err := l.Add(r, a^b); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		xor  uint64
		done bool
	}{{a ^ c, false}, {c, false}, {b, true}}
	for i, s := range steps {
		found, done := l.Update(r, s.xor)
		if !found || done != s.done {
			t.Fatalf("step %d: found=%v done=%v, want done=%v", i, found, done, s.done)
		}
	}
	if l.Len() != 0 {
		t.Fatalf("Len = %d after completion", l.Len())
	}
	if found, _ := l.Update(r, 1); found {
		t.Fatal("a completed root is still found")
	}
}

func TestAddErrors(t *testing.T) {
	l := newLedger(t, 2, 1)
	r := wire.Root{Task: 1, ID: 1}
	if err := l.Add(r, 0); !errors.Is(err, ErrZero) {
		t.Fatalf("Add(0) = %v", err)
	}
	if err := l.Add(r, 5); err != nil {
		t.Fatal(err)
	}
	if err := l.Add(wire.Root{Task: 1, ID: 2}, 5); !errors.Is(err, ErrFull) {
		t.Fatalf("Add over capacity = %v", err)
	}
	l2 := newLedger(t, 2, 0)
	_ = l2.Add(r, 5)
	if err := l2.Add(r, 6); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate Add = %v", err)
	}
	if _, err := New(1, 0); err == nil {
		t.Fatal("New(1 bucket) succeeded")
	}
}

func TestRotateDropsOldest(t *testing.T) {
	l := newLedger(t, 3, 0)
	old := wire.Root{Task: 1, ID: 1}
	_ = l.Add(old, 7)
	if n := l.Rotate(); n != 0 {
		t.Fatalf("first rotation dropped %d", n)
	}
	young := wire.Root{Task: 1, ID: 2}
	_ = l.Add(young, 9)
	// An update in an older bucket keeps the root there.
	if found, _ := l.Update(old, 1); !found {
		t.Fatal("old root not found after one rotation")
	}
	if n := l.Rotate(); n != 0 {
		t.Fatalf("second rotation dropped %d", n)
	}
	if n := l.Rotate(); n != 1 || l.Len() != 1 {
		t.Fatalf("third rotation dropped %d, Len %d; want 1, 1", n, l.Len())
	}
	if l.Remove(old) {
		t.Fatal("a dropped root was still pending")
	}
	if !l.Remove(young) || l.Len() != 0 {
		t.Fatal("Remove of the young root failed")
	}
}

func BenchmarkAddUpdate(b *testing.B) {
	l := newLedger(b, DefaultBuckets, 0)
	const window = 1024
	// Warm up: fill the maps to their steady-state size.
	for i := uint64(1); i <= window; i++ {
		_ = l.Add(wire.Root{Task: 1, ID: i}, i)
		l.Update(wire.Root{Task: 1, ID: i}, i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := wire.Root{Task: 1, ID: uint64(i%window) + 1}
		if err := l.Add(r, 0xabc); err != nil {
			b.Fatal(err)
		}
		l.Update(r, 0xab0)
		if _, done := l.Update(r, 0xc); !done {
			b.Fatal("not completed")
		}
	}
}

func BenchmarkUpdatePending(b *testing.B) {
	l := newLedger(b, DefaultBuckets, 0)
	const n = 4096
	for i := uint64(1); i <= n; i++ {
		_ = l.Add(wire.Root{Task: 1, ID: i}, 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l.Update(wire.Root{Task: 1, ID: uint64(i%n) + 1}, 2)
	}
}
