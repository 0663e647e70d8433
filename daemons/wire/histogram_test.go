package wire

import (
	"testing"
	"time"
)

func TestLatencyHistogramBuckets(t *testing.T) {
	var h LatencyHistogram
	for _, tc := range []struct {
		d      time.Duration
		bucket string
	}{
		{0, "1us"}, {time.Microsecond, "1us"}, {time.Microsecond + 1, "4us"}, {3 * time.Millisecond, "4ms"},
		{16 * time.Second, "16s"}, {time.Hour, "inf"},
	} {
		h = LatencyHistogram{}
		h.Observe(tc.d, 3)
		ms := h.AppendMetrics(nil, "x")
		if len(ms) != len(LatencyBucketNames) {
			t.Fatalf("%d metrics, want %d", len(ms), len(LatencyBucketNames))
		}
		for _, m := range ms {
			want := 0.0
			if m.GetName() == "x.le."+tc.bucket {
				want = 3
			}
			if m.GetValue() != want {
				t.Errorf("%v: %s = %v, want %v", tc.d, m.GetName(), m.GetValue(), want)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { h.Observe(time.Millisecond, 1) }); n != 0 {
		t.Errorf("Observe allocates %v times", n)
	}
}
