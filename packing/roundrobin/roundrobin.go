package roundrobin

import (
	"fmt"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/packing/internal/binpack"
)

// Name is the algorithm's name in the packing registry.
const Name = "roundrobin"

func init() {
	spi.RegisterPacking(Name, func(cfg spi.Config) (spi.Packing, error) {
		p, err := New(cfg)
		if err != nil {
			return nil, err
		}
		return p, nil
	})
}

// Packing is the round-robin algorithm. It implements spi.Packing and
// spi.Repacking and is safe for concurrent use.
type Packing struct {
	settings binpack.Settings
}

var (
	_ spi.Packing   = (*Packing)(nil)
	_ spi.Repacking = (*Packing)(nil)
)

// New reads the egret.packing.* keys of cfg (see packing/README.md).
func New(cfg spi.Config) (*Packing, error) {
	s, err := binpack.ParseSettings(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Packing{settings: s}, nil
}

// Pack deals the instances of t to topology.containers containers, which
// must not exceed the number of tasks.
func (p *Packing) Pack(t *topology.Topology) (*plan.PackingPlan, error) {
	s, err := binpack.NewSpec(t, p.settings, binpack.LimitsOnly)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if s.Containers > s.Tasks {
		return nil, fmt.Errorf("%s: %w", Name, binpack.TooManyContainers(topology.KeyContainers, s.Containers, s.Tasks))
	}
	bins := make([]*binpack.Bin, s.Containers)
	for i := range bins {
		bins[i] = &binpack.Bin{ID: i + 1}
	}
	for k, in := range s.Instances(t) {
		bins[k%len(bins)].Add(in)
	}
	if err := s.CheckBins(bins); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return s.Plan(t.ID, bins), nil
}

// Repack changes the parallelism of components and/or the number of
// containers of the running plan current.
//
// Contract (shared by every built-in algorithm):
//   - t is the topology after the change: its components carry the new
//     parallelism (absolute task counts). parallelism may be nil; each
//     entry must name a component of t and equal its parallelism in t, so a
//     caller that forgot to update t gets an error. Components cannot be
//     removed; a component of t missing from current gets all new tasks.
//     t's topology.containers is not read.
//   - Tasks with index below the new parallelism keep their task id, index
//     and container; the tasks with the highest indexes are removed. New
//     tasks get ids above the highest id of current, in component
//     definition order, then index.
//   - containers == 0 or == the current count keeps the containers; new
//     tasks go to the container with the fewest instances (lowest id on
//     ties), so dealing continues round robin.
//   - Any other containers value rebalances to exactly that many: tasks of
//     containers above it move, each container keeps at most its even share
//     (total/containers, one more for the fullest ones; its newest tasks
//     leave first), and the moved and new tasks are dealt round robin to
//     the containers below their share. It must not exceed the task count.
//   - Containers left empty are dropped and the rest renumbered 1..N in
//     order. Container limits are checked as in Pack (error wrapping
//     spi.ErrCannotFit). The result passes plan.Validate against t.
func (p *Packing) Repack(t *topology.Topology, current *plan.PackingPlan, parallelism map[string]int, containers int) (*plan.PackingPlan, error) {
	s, err := binpack.NewSpec(t, p.settings, binpack.LimitsOnly)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	out, err := binpack.Repack(s, binpack.Strategy{Place: binpack.PlaceLeastLoaded}, t, current, parallelism, containers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return out, nil
}
