package binpack

import (
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
)

// Dim is one resource dimension.
type Dim int

// The resource dimensions, in the order errors report them.
const (
	CPU Dim = iota
	RAM
	Disk
)

// Dims lists every dimension.
var Dims = [...]Dim{CPU, RAM, Disk}

func (d Dim) String() string {
	switch d {
	case CPU:
		return "cpu"
	case RAM:
		return "ram"
	default:
		return "disk"
	}
}

// Get returns r's amount in d (bytes for ram and disk).
func (d Dim) Get(r plan.Resources) float64 {
	switch d {
	case CPU:
		return r.CPU
	case RAM:
		return float64(r.RAM)
	default:
		return float64(r.Disk)
	}
}

// Set stores v as r's amount in d.
func (d Dim) Set(r *plan.Resources, v float64) {
	switch d {
	case CPU:
		r.CPU = v
	case RAM:
		r.RAM = int64(v)
	default:
		r.Disk = int64(v)
	}
}

// Format renders an amount of d for messages: "1.5 cpu", "2 GiB ram".
func (d Dim) Format(v float64) string {
	if d == CPU {
		return plan.FormatCPU(v) + " cpu"
	}
	return plan.FormatBytes(int64(v)) + " " + d.String()
}

// Amount renders an amount of d without the dimension: "1.5", "2 GiB".
func (d Dim) Amount(v float64) string {
	if d == CPU {
		return plan.FormatCPU(v)
	}
	return plan.FormatBytes(int64(v))
}

// ComponentKey is the topology setting of the per-instance amount.
func (d Dim) ComponentKey() string {
	return [...]string{topology.KeyCPU, topology.KeyRAM, topology.KeyDisk}[d]
}

// ContainerKey is the topology setting of the container limit.
func (d Dim) ContainerKey() string {
	return [...]string{topology.KeyContainerCPU, topology.KeyContainerRAM, topology.KeyContainerDisk}[d]
}

// DefaultKey is the config key of the default instance amount.
func (d Dim) DefaultKey() string {
	return [...]string{KeyDefaultCPU, KeyDefaultRAM, KeyDefaultDisk}[d]
}

// PaddingKey is the config key of the fixed padding.
func (d Dim) PaddingKey() string {
	return [...]string{KeyPaddingCPU, KeyPaddingRAM, KeyPaddingDisk}[d]
}

// cpuEpsilon absorbs float rounding when cpu amounts are summed.
const cpuEpsilon = 1e-9
