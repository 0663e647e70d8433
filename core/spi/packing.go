package spi

import (
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
)

// Packing places a topology's tasks into containers.
type Packing interface {
	// Pack returns the packing plan of t. A topology that cannot fit gives
	// an error wrapping ErrCannotFit that names the component and the
	// resource that is short.
	Pack(t *topology.Topology) (*plan.PackingPlan, error)
}

// Repacking changes an existing packing plan.
type Repacking interface {
	// Repack returns a plan for t in which each component in
	// parallelism has that many tasks and, when containers > 0, the
	// instances are spread over that many containers. Tasks that remain keep
	// their task id and, where possible, their container.
	Repack(t *topology.Topology, current *plan.PackingPlan, parallelism map[string]int, containers int) (*plan.PackingPlan, error)
}

// PackingFactory builds a packing algorithm from its config.
type PackingFactory func(cfg Config) (Packing, error)
