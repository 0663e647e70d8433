package plan

import (
	"math"
	"strconv"
)

// FormatCPU renders cores with at most three decimals: "1", "0.5".
func FormatCPU(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// FormatBytes renders a byte amount in binary units with at most two
// decimals: "512 MiB", "1.5 GiB", "100 B".
func FormatBytes(b int64) string {
	units := []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	neg := ""
	if b < 0 {
		neg, b = "-", -b
	}
	for _, u := range units {
		if b >= u.size {
			v := math.Round(float64(b)/float64(u.size)*100) / 100
			return neg + strconv.FormatFloat(v, 'f', -1, 64) + " " + u.name
		}
	}
	return neg + strconv.FormatInt(b, 10) + " B"
}
