package harness

import (
	"math"
	"sort"
)

// Stat summarizes repeated measurements: the median and the range.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Summarize returns the median, minimum and maximum of xs; NaNs are
// ignored. The median of an even count is the mean of the middle two.
func Summarize(xs []float64) Stat {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Stat{}
	}
	sort.Float64s(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Stat{Median: med, Min: v[0], Max: v[len(v)-1], N: len(v)}
}
