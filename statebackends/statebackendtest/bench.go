package statebackendtest

import (
	"encoding/binary"
	"io"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"
)

// Bench measures the backend: puts and gets of 8-byte counters under
// 16-byte keys spread over the key groups, and the synchronous and
// asynchronous parts of a snapshot at two state sizes.
func (s Suite) Bench(b *testing.B) {
	open := func(b *testing.B) statebackend.Backend {
		be, err := statebackend.Open(s.Name, statebackend.Options{
			Dir: filepath.Join(b.TempDir(), "state"), MaxParallelism: keygroup.DefaultMaxParallelism,
			Groups: keygroup.Range{Start: 0, End: keygroup.DefaultMaxParallelism},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = be.Close() })
		return be
	}
	const keys = 1 << 20
	key := func(i int) statebackend.Key {
		var kb [16]byte
		h := uint64(i) * 0x9E3779B97F4A7C15
		binary.BigEndian.PutUint64(kb[:], h)
		binary.BigEndian.PutUint64(kb[8:], uint64(i))
		return statebackend.Key{Group: keygroup.Of(h, keygroup.DefaultMaxParallelism), State: "count", Key: kb[:]}
	}
	var val [8]byte
	b.Run("Put", func(b *testing.B) {
		be := open(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			binary.BigEndian.PutUint64(val[:], uint64(i))
			if err := be.Put(key(i%keys), val[:], 0); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("Get", func(b *testing.B) {
		be := open(b)
		const n = 100000
		for i := 0; i < n; i++ {
			if err := be.Put(key(i), val[:], 0); err != nil {
				b.Fatal(err)
			}
		}
		dst := make([]byte, 0, 16)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			var ok bool
			var err error
			if dst, ok, err = be.Get(key(i%n), dst[:0]); err != nil || !ok {
				b.Fatal(ok, err)
			}
			i++
		}
	})
	for _, n := range []int{10000, 1000000} {
		be := open(b)
		for i := 0; i < n; i++ {
			if err := be.Put(key(i), val[:], 0); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("SnapshotSync/keys="+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				snap, err := be.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				snap.Release()
				// A write after each fork: the next fork is not free.
				if err := be.Put(key(0), val[:], 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("SnapshotAsync/keys="+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				snap, err := be.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				w, err := snap.WriteTo(io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				snap.Release()
				b.ReportMetric(float64(w)/time.Since(start).Seconds()/(1<<20), "MiB/s")
			}
		})
	}
}
