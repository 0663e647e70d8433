package streamlet_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/egret-stream/egret/api/streamlet"
	"github.com/egret-stream/egret/daemons/instance/inproc"
)

// BenchmarkFusing runs a source → map → filter → map → consume chain of
// 200 000 elements on the in-process runtime, fused into one component
// and with one component per stage, and reports the wall time per
// element from start until the consumer saw the last one.
func BenchmarkFusing(b *testing.B) {
	const elements = 200_000
	for _, fuse := range []bool{true, false} {
		name := map[bool]string{true: "fused", false: "separate"}[fuse]
		b.Run(name, func(b *testing.B) {
			var total time.Duration
			for n := 0; n < b.N; n++ {
				sb := streamlet.New("fusing")
				if !fuse {
					sb.DisableFusing()
				}
				var seen atomic.Int64
				done := make(chan struct{})
				nums := streamlet.Slice(sb, "n", func(int) []int64 {
					out := make([]int64, elements)
					for i := range out {
						out[i] = int64(i)
					}
					return out
				})
				m := streamlet.Map(nums, func(v int64) int64 { return v * 3 })
				f := streamlet.Filter(m, func(v int64) bool { return v >= 0 })
				s := streamlet.Map(f, func(v int64) int64 { return v + 1 })
				streamlet.Consume(s, func(int64) {
					if seen.Add(1) == elements {
						close(done)
					}
				})
				tb, err := sb.Compile()
				if err != nil {
					b.Fatal(err)
				}
				topo, err := tb.Build()
				if err != nil {
					b.Fatal(err)
				}
				r, err := inproc.New(topo, inproc.Options{})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				start := time.Now()
				go func() {
					select {
					case <-done:
					case <-time.After(time.Minute):
					}
					total += time.Since(start)
					cancel()
				}()
				if _, err := r.Run(ctx); err != nil {
					b.Fatal(err)
				}
				cancel()
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*elements), "ns/element")
		})
	}
}
