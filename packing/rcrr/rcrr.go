package rcrr

import (
	"fmt"
	"math"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/packing/internal/binpack"
)

// Name is the algorithm's name in the packing registry.
const Name = "rcrr"

func init() {
	spi.RegisterPacking(Name, func(cfg spi.Config) (spi.Packing, error) {
		p, err := New(cfg)
		if err != nil {
			return nil, err
		}
		return p, nil
	})
}

// Packing is the resource-compliant round-robin algorithm. It implements
// spi.Packing and spi.Repacking and is safe for concurrent use.
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

// Pack packs t as described in the package comment. topology.containers
// must not exceed the number of tasks.
func (p *Packing) Pack(t *topology.Topology) (*plan.PackingPlan, error) {
	s, err := binpack.NewSpec(t, p.settings, binpack.DefaultCapacity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if s.Containers > s.Tasks {
		return nil, fmt.Errorf("%s: %w", Name, binpack.TooManyContainers(topology.KeyContainers, s.Containers, s.Tasks))
	}
	ins := s.Instances(t)
	// No count below the total demand divided by the usable capacity can
	// fit, so start there. With one instance per container everything fits
	// (NewSpec checked each instance), so the loop returns by n == s.Tasks.
	for n := max(s.Containers, lowerBound(s, ins)); n <= s.Tasks; n++ {
		if bins, ok := deal(s, ins, n); ok {
			return s.Plan(t.ID, bins), nil
		}
	}
	return nil, fmt.Errorf("%s: %w: no container count up to %d fits", Name, spi.ErrCannotFit, s.Tasks)
}

// lowerBound is the fewest containers that could hold the instances'
// total demand in every bounded dimension.
func lowerBound(s *binpack.Spec, ins []plan.Instance) int {
	var sum plan.Resources
	for _, in := range ins {
		sum = sum.Add(in.Resources)
	}
	n := 1
	for _, d := range binpack.Dims {
		if s.Bounded[d] {
			n = max(n, int(math.Ceil(d.Get(sum)/s.Usable(d)-1e-9)))
		}
	}
	return min(n, len(ins))
}

// deal places ins in strict round robin over n containers and reports
// whether every instance fit its turn.
func deal(s *binpack.Spec, ins []plan.Instance, n int) ([]*binpack.Bin, bool) {
	bins := make([]*binpack.Bin, n)
	for i := range bins {
		bins[i] = &binpack.Bin{ID: i + 1}
	}
	for k, in := range ins {
		b := bins[k%n]
		if !s.Fits(b.Used, len(b.Instances)+1, in.Resources) {
			return nil, false
		}
		b.Add(in)
	}
	return bins, true
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
//     tasks (sorted as in Pack) are dealt round robin starting at position
//     (kept tasks mod containers), skipping containers without room, and a
//     container is added when none has room. If the instance resources
//     changed so that a container no longer fits, its newest tasks are
//     moved the same way.
//   - Any other containers value rebalances: tasks of containers above it
//     move, each container keeps at most its even share (total/containers,
//     one more for the fullest ones; its newest tasks leave first), and the
//     moved and new tasks are dealt round robin to the containers below
//     their share that have room, else first fit, else to a new container;
//     so the result has exactly that many containers unless capacity
//     forces more. It must not exceed the task count.
//   - Containers left empty are dropped and the rest renumbered 1..N in
//     order. The result passes plan.Validate against t.
func (p *Packing) Repack(t *topology.Topology, current *plan.PackingPlan, parallelism map[string]int, containers int) (*plan.PackingPlan, error) {
	s, err := binpack.NewSpec(t, p.settings, binpack.DefaultCapacity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	strat := binpack.Strategy{Place: binpack.PlaceNextFit, CheckFit: true}
	out, err := binpack.Repack(s, strat, t, current, parallelism, containers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return out, nil
}
