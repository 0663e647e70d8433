package executor

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/daemons/executor/internal/cgroup"
)

// Memory margin between an instance's ram in the packing plan and its
// GOMEMLIMIT: GOMEMLIMIT bounds only the memory the Go runtime manages, not
// the binary's text, thread stacks outside Go, or cgo, and the runtime lets
// the heap overshoot it briefly. The margin is a tenth of the ram, at least
// MinMemoryMargin, and never more than half the ram.
const (
	MinMemoryMargin = 16 << 20
	memoryMarginDiv = 10
)

// MemoryMargin returns the margin of an instance with ram bytes.
func MemoryMargin(ram int64) int64 {
	return min(max(ram/memoryMarginDiv, MinMemoryMargin), ram/2)
}

// Limits are what the packing plan gives one instance, as the executor
// enforces them.
type Limits struct {
	// CPU (cores), RAM and Disk (bytes) are the plan's; 0 is unlimited.
	CPU  float64
	RAM  int64
	Disk int64
	// GOMAXPROCS is ceil(CPU), at least 1, unless egret.instance.gomaxprocs
	// overrides it; GOMEMLIMIT is RAM − MemoryMargin(RAM). 0: not set.
	GOMAXPROCS int
	GOMEMLIMIT int64
}

// instanceLimits derives the limits of in; maxProcs is
// egret.instance.gomaxprocs (0: from the cpu).
func instanceLimits(r plan.Resources, maxProcs int) Limits {
	l := Limits{CPU: r.CPU, RAM: r.RAM, Disk: r.Disk, GOMAXPROCS: maxProcs}
	if l.GOMAXPROCS <= 0 && r.CPU > 0 {
		l.GOMAXPROCS = max(int(math.Ceil(r.CPU-1e-9)), 1)
	}
	if r.RAM > 0 {
		l.GOMEMLIMIT = r.RAM - MemoryMargin(r.RAM)
	}
	return l
}

// cgroupLimits are the cgroup limits of an instance: cpu.max from its cpu,
// memory.max its ram, memory.high halfway between GOMEMLIMIT and ram so
// the kernel reclaims before it kills.
func (l Limits) cgroupLimits() cgroup.Limits {
	c := cgroup.Limits{CPU: l.CPU, MemoryMax: l.RAM}
	if l.RAM > 0 {
		c.MemoryHigh = l.RAM - MemoryMargin(l.RAM)/2
	}
	return c
}

// env returns the variables that apply the limits to a Go instance,
// leaving alone any the operator set (in the executor's environment or
// Config.ExtraEnv): an explicit GOMAXPROCS or GOMEMLIMIT wins.
func (l Limits) env(extra []string) []string {
	var out []string
	if l.GOMAXPROCS > 0 && !hasEnv(extra, "GOMAXPROCS") {
		out = append(out, "GOMAXPROCS="+strconv.Itoa(l.GOMAXPROCS))
	}
	if l.GOMEMLIMIT > 0 && !hasEnv(extra, "GOMEMLIMIT") {
		out = append(out, "GOMEMLIMIT="+strconv.FormatInt(l.GOMEMLIMIT, 10))
	}
	return out
}

func hasEnv(extra []string, name string) bool {
	if _, ok := os.LookupEnv(name); ok {
		return true
	}
	for _, kv := range extra {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// FormatBytes prints n in the largest binary unit that divides it
// (512 MiB, 1.5 GiB).
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v := float64(n)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v == math.Trunc(v) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
