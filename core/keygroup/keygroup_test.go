package keygroup

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/egret-stream/egret/core/tuple"
)

// TestReferenceValues pins the mapping of real keys (their fields-grouping
// hash is pinned in core/tuple): a change here re-routes every key of
// every running topology and strands its state.
func TestReferenceValues(t *testing.T) {
	for _, c := range []struct {
		key          any
		hash         uint64
		group, task5 int
	}{
		{"apple", 0x18bc53bb63bc80e5, 12, 0},
		{"key-1", 0x46b5280692258d38, 35, 1},
		{int64(42), 0x44c77c508883ad78, 34, 1},
	} {
		h, err := tuple.HashValues(nil, c.key)
		if err != nil || h != c.hash {
			t.Fatalf("hash of %v = %x, %v; want %x", c.key, h, err, c.hash)
		}
		if g, task := Of(h, DefaultMaxParallelism), TaskIndex(h, 5, DefaultMaxParallelism); g != c.group || task != c.task5 {
			t.Errorf("%v: group %d, task %d of 5; want %d, %d", c.key, g, task, c.group, c.task5)
		}
	}
	// Real keys spread over the tasks.
	counts := make([]int, 8)
	for i := 0; i < 8000; i++ {
		h, _ := tuple.HashValues(nil, fmt.Sprintf("key-%d", i))
		counts[TaskIndex(h, len(counts), DefaultMaxParallelism)]++
	}
	for i, c := range counts {
		if c < 800 || c > 1200 {
			t.Errorf("task %d got %d of 8000 keys", i, c)
		}
	}
}

// TestEveryKeyToExactlyOneTask checks, for every max parallelism of a
// sample and every parallelism up to it, that the task ranges partition
// the key groups into contiguous, non-empty, ordered ranges, and that
// TaskIndex sends a key to the task whose range holds the key's group.
func TestEveryKeyToExactlyOneTask(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 1))
	hashes := make([]uint64, 2000)
	for i := range hashes {
		hashes[i] = rng.Uint64()
	}
	hashes = append(hashes, 0, 1, math.MaxUint64, math.MaxUint64-1, 1<<63)
	for _, maxP := range []int{1, 2, 3, 7, 64, 100, DefaultMaxParallelism, 1000} {
		for p := 1; p <= maxP; p++ {
			next := 0
			for i := 0; i < p; i++ {
				r := RangeOf(i, p, maxP)
				if r.Start != next || r.Len() < 1 {
					t.Fatalf("max %d, parallelism %d: task %d owns %v after %d", maxP, p, i, r, next)
				}
				for g := r.Start; g < r.End; g++ {
					if o := Owner(g, maxP, p); o != i {
						t.Fatalf("max %d, parallelism %d: group %d is in task %d's range %v, Owner says %d", maxP, p, g, i, r, o)
					}
				}
				next = r.End
			}
			if next != maxP {
				t.Fatalf("max %d, parallelism %d: ranges end at %d", maxP, p, next)
			}
			for _, h := range hashes {
				g := Of(h, maxP)
				if g < 0 || g >= maxP {
					t.Fatalf("max %d: hash %x in group %d", maxP, h, g)
				}
				task := TaskIndex(h, p, maxP)
				if !RangeOf(task, p, maxP).Contains(g) {
					t.Fatalf("max %d, parallelism %d: hash %x (group %d) to task %d owning %v", maxP, p, h, g, task, RangeOf(task, p, maxP))
				}
			}
		}
	}
}

// TestLimit checks the largest max parallelism and the group of extreme
// hashes.
func TestLimit(t *testing.T) {
	if g := Of(math.MaxUint64, Limit); g != Limit-1 {
		t.Errorf("group of the largest hash = %d, want %d", g, Limit-1)
	}
	if g := Of(0, Limit); g != 0 {
		t.Errorf("group of hash 0 = %d", g)
	}
	if r := RangeOf(Limit-1, Limit, Limit); r != (Range{Limit - 1, Limit}) {
		t.Errorf("last range at the limit = %v", r)
	}
}

// TestSpread checks that key groups are filled evenly by uniform hashes.
func TestSpread(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	counts := make([]int, DefaultMaxParallelism)
	const n = 128000
	for i := 0; i < n; i++ {
		counts[Of(rng.Uint64(), DefaultMaxParallelism)]++
	}
	for g, c := range counts {
		if c < 800 || c > 1200 {
			t.Errorf("group %d holds %d of %d keys", g, c, n)
		}
	}
}

// TestRescaleMovesWholeGroups checks that changing the parallelism moves
// key groups, never splits one.
func TestRescaleMovesWholeGroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	for i := 0; i < 5000; i++ {
		h := rng.Uint64()
		g := Of(h, 128)
		for _, p := range []int{1, 3, 4, 17, 128} {
			if TaskIndex(h, p, 128) != Owner(g, 128, p) {
				t.Fatalf("hash %x: task does not follow its group", h)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		p, max int
		ok     bool
	}{{1, 1, true}, {128, 128, true}, {129, 128, false}, {1, 0, false}, {1, Limit + 1, false}, {Limit, Limit, true}} {
		if err := Check(c.p, c.max); (err == nil) != c.ok {
			t.Errorf("Check(%d, %d) = %v", c.p, c.max, err)
		}
	}
}

func BenchmarkTaskIndex(b *testing.B) {
	h := uint64(0x9E3779B97F4A7C15)
	s := 0
	for b.Loop() {
		s += TaskIndex(h, 7, DefaultMaxParallelism)
		h += 0x9E3779B97F4A7C15
	}
	_ = s
}
