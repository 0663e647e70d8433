package wire

import (
	"sync/atomic"
	"time"

	"github.com/egret-stream/egret/proto/egretpb"
)

// LatencyBounds are the upper bounds of the latency histograms processes
// publish, in powers of 4 from 1µs to 16s; a last bucket holds the rest.
// LatencyBucketNames name them in metric names: <name>.le.<bucket>.
var (
	LatencyBounds = [...]time.Duration{
		time.Microsecond, 4 * time.Microsecond, 16 * time.Microsecond, 64 * time.Microsecond, 256 * time.Microsecond,
		time.Millisecond, 4 * time.Millisecond, 16 * time.Millisecond, 64 * time.Millisecond, 256 * time.Millisecond,
		time.Second, 4 * time.Second, 16 * time.Second,
	}
	LatencyBucketNames = [len(LatencyBounds) + 1]string{
		"1us", "4us", "16us", "64us", "256us", "1ms", "4ms", "16ms", "64ms", "256ms", "1s", "4s", "16s", "inf",
	}
)

// LatencyHistogram counts latencies into the LatencyBounds buckets. It is
// written by one goroutine and read by reporters; Observe does not
// allocate.
type LatencyHistogram struct {
	buckets [len(LatencyBounds) + 1]atomic.Int64
}

// Observe counts d weight times (a sampled measurement stands for weight
// events).
func (h *LatencyHistogram) Observe(d time.Duration, weight int64) {
	i := 0
	for i < len(LatencyBounds) && d > LatencyBounds[i] {
		i++
	}
	h.buckets[i].Add(weight)
}

// Count returns the events counted in bucket i (not cumulative).
func (h *LatencyHistogram) Count(i int) int64 { return h.buckets[i].Load() }

// AppendMetrics appends the buckets as metrics <name>.le.<bucket>, each the
// running count of events in that bucket alone (not cumulative, so that
// every sink can sum or difference them).
func (h *LatencyHistogram) AppendMetrics(out []*egretpb.Metric, name string) []*egretpb.Metric {
	for i := range h.buckets {
		out = append(out, &egretpb.Metric{Name: name + ".le." + LatencyBucketNames[i], Value: float64(h.buckets[i].Load())})
	}
	return out
}
