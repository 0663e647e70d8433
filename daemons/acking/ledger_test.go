package acking

import (
	"errors"
	"math/rand/v2"
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

// TestLedgerMatchesModel drives the ledger and a map with the same random
// operations (roots drawn from a small set, so that adds, duplicates,
// updates, removals, growth and rotations interleave) and compares every
// result and, after each step, every root.
func TestLedgerMatchesModel(t *testing.T) {
	type ent struct {
		xor   uint64
		epoch int
	}
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		l := newLedger(t, 3, 0)
		model := map[wire.Root]ent{}
		epoch := 0
		roots := make([]wire.Root, 300)
		for i := range roots {
			// Few tasks and clustered ids collide on home slots.
			roots[i] = wire.Root{Task: uint32(rng.IntN(3)), ID: uint64(rng.IntN(1000))}
		}
		for step := 0; step < 20000; step++ {
			r := roots[rng.IntN(len(roots))]
			x := rng.Uint64N(4) // 0 and repeated values on purpose
			e, pending := model[r]
			switch op := rng.IntN(100); {
			case op < 40:
				err := l.Add(r, x)
				switch {
				case x == 0:
					if !errors.Is(err, ErrZero) {
						t.Fatalf("seed %d step %d: Add(%v, 0) = %v", seed, step, r, err)
					}
				case pending:
					if !errors.Is(err, ErrDuplicate) {
						t.Fatalf("seed %d step %d: duplicate Add(%v) = %v", seed, step, r, err)
					}
				default:
					if err != nil {
						t.Fatalf("seed %d step %d: Add(%v) = %v", seed, step, r, err)
					}
					model[r] = ent{xor: x, epoch: epoch}
				}
			case op < 85:
				found, done := l.Update(r, x)
				wantDone := pending && e.xor^x == 0
				if found != pending || done != wantDone {
					t.Fatalf("seed %d step %d: Update(%v) = %v, %v; want %v, %v", seed, step, r, found, done, pending, wantDone)
				}
				if wantDone {
					delete(model, r)
				} else if pending {
					e.xor ^= x
					model[r] = e
				}
			case op < 98:
				if got := l.Remove(r); got != pending {
					t.Fatalf("seed %d step %d: Remove(%v) = %v; want %v", seed, step, r, got, pending)
				}
				delete(model, r)
			default:
				epoch++
				want := 0
				for k, v := range model {
					if epoch-v.epoch >= 3 {
						delete(model, k)
						want++
					}
				}
				if got := l.Rotate(); got != want {
					t.Fatalf("seed %d step %d: Rotate dropped %d; want %d", seed, step, got, want)
				}
			}
			if l.Len() != len(model) {
				t.Fatalf("seed %d step %d: Len %d; model %d", seed, step, l.Len(), len(model))
			}
			if step%500 == 0 {
				for _, r := range roots {
					i, ok := l.find(r)
					e, pending := model[r]
					if ok != pending || ok && l.slots[i].xor != e.xor {
						t.Fatalf("seed %d step %d: root %v found=%v, model pending=%v", seed, step, r, ok, pending)
					}
				}
			}
		}
	}
}

// BenchmarkTree is one tuple tree as a spout task's stream manager sees it
// with 5,000 pending roots of salted, slot-based ids (as instances draw
// them): an Add, two updates that keep it pending and the one that
// completes it.
func BenchmarkTree(b *testing.B) {
	l := newLedger(b, DefaultBuckets, 0)
	const pending = 5000
	salt := uint64(0x5bd1e9955bd1e995)
	id := func(i int) uint64 { return (uint64(i/pending)<<32 | uint64(i%pending)) ^ salt }
	for i := 0; i < pending; i++ {
		_ = l.Add(wire.Root{Task: 3, ID: id(i)}, 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		old := wire.Root{Task: 3, ID: id(i)}
		if found, done := l.Update(old, 1); !found || !done {
			b.Fatal("pending root not completed")
		}
		r := wire.Root{Task: 3, ID: id(i + pending)}
		if err := l.Add(r, 0xabc^1); err != nil {
			b.Fatal(err)
		}
		l.Update(r, 0xa00)
		l.Update(r, 0x0bc)
	}
}
