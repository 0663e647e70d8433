package binpack

import (
	"errors"
	"fmt"
	"sort"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
)

// Placer chooses the container of one instance during a scale-up that keeps
// the container count. It adds in to a bin of st (or to st.NewBin()).
type Placer func(s *Spec, st *State, in plan.Instance)

// Strategy is what an algorithm contributes to Repack.
type Strategy struct {
	// Place places new instances when the container count is unchanged.
	Place Placer
	// CheckFit: placement respects capacity, and instances of a container
	// that no longer fits (resources changed) are moved (ffd, rcrr). When
	// false (roundrobin) placement ignores capacity and an overfull
	// container is an error.
	// A rebalance then opens a container when no container fits.
	CheckFit bool
}

// State is the set of containers during repacking.
type State struct {
	Bins []*Bin
	// Cursor is the next position of a round-robin placer.
	Cursor int
}

// NewBin appends an empty container and returns it.
func (st *State) NewBin() *Bin {
	id := 1
	if n := len(st.Bins); n > 0 {
		id = st.Bins[n-1].ID + 1
	}
	b := &Bin{ID: id}
	st.Bins = append(st.Bins, b)
	return b
}

// PlaceLeastLoaded (roundrobin) adds in to the container with the fewest
// instances, the lowest position on ties; it ignores capacity.
func PlaceLeastLoaded(_ *Spec, st *State, in plan.Instance) {
	best := st.Bins[0]
	for _, b := range st.Bins[1:] {
		if len(b.Instances) < len(best.Instances) {
			best = b
		}
	}
	best.Add(in)
}

// PlaceFirstFit (ffd) adds in to the first container it fits, else to a new
// container.
func PlaceFirstFit(s *Spec, st *State, in plan.Instance) {
	for _, b := range st.Bins {
		if s.Fits(b.Used, len(b.Instances)+1, in.Resources) {
			b.Add(in)
			return
		}
	}
	st.NewBin().Add(in)
}

// PlaceNextFit (rcrr) tries the containers in circular order from the
// cursor and adds in to the first that fits, else to a new container; the
// cursor moves past the container used.
func PlaceNextFit(s *Spec, st *State, in plan.Instance) {
	n := len(st.Bins)
	for i := 0; i < n; i++ {
		j := (st.Cursor + i) % n
		if s.Fits(st.Bins[j].Used, len(st.Bins[j].Instances)+1, in.Resources) {
			st.Bins[j].Add(in)
			st.Cursor = (j + 1) % n
			return
		}
	}
	st.NewBin().Add(in)
	st.Cursor = 0
}

// Repack implements spi.Repacking for every built-in algorithm; s must be
// the spec of t. The contract is documented on the algorithms' Repack
// methods and in packing/README.md.
func Repack(s *Spec, strat Strategy, t *topology.Topology, current *plan.PackingPlan, parallelism map[string]int, containers int) (*plan.PackingPlan, error) {
	if current == nil {
		return nil, errors.New("repack: current packing plan is nil")
	}
	if len(current.Containers) == 0 {
		return nil, errors.New("repack: current packing plan has no containers")
	}
	if containers < 0 {
		return nil, fmt.Errorf("repack: container count %d is negative; pass 0 to keep the current containers", containers)
	}
	if err := checkParallelism(t, parallelism); err != nil {
		return nil, err
	}
	if containers > s.Tasks {
		return nil, fmt.Errorf("repack: %w", TooManyContainers("the requested container count", containers, s.Tasks))
	}
	byComp, maxID, err := checkCurrent(t, current)
	if err != nil {
		return nil, err
	}

	// Keep the tasks whose index stays below the new parallelism; the
	// highest indexes go first.
	st := &State{}
	cs := append([]plan.Container(nil), current.Containers...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].ID < cs[j].ID })
	kept := 0
	for _, c := range cs {
		b := &Bin{ID: c.ID}
		for _, in := range c.Instances {
			comp, _ := t.Component(in.Component)
			if in.Index < comp.Parallelism {
				in.Resources = s.Res[in.Component]
				b.Add(in)
				kept++
			}
		}
		st.Bins = append(st.Bins, b)
	}
	// New tasks: fresh ids above every id of the current plan, components
	// in definition order, then index.
	var pool []plan.Instance
	for _, c := range t.Components {
		for i := byComp[c.Name]; i < c.Parallelism; i++ {
			maxID++
			pool = append(pool, plan.Instance{Component: c.Name, TaskID: maxID, Index: i})
		}
	}

	if containers > 0 && containers != len(st.Bins) {
		rebalance(s, strat, st, containers, pool)
	} else {
		if strat.CheckFit {
			pool = append(pool, evictOverfull(s, st.Bins)...)
		}
		st.Cursor = kept % len(st.Bins)
		for _, in := range s.Sort(pool) {
			strat.Place(s, st, in)
		}
	}
	if err := s.CheckBins(st.Bins); err != nil {
		return nil, fmt.Errorf("repack: %w", err)
	}
	id := t.ID
	if id == "" {
		id = current.TopologyID
	}
	p := s.Plan(id, st.Bins)
	if err := p.Validate(t); err != nil {
		return nil, fmt.Errorf("repack: internal error, the new plan is invalid: %w", err)
	}
	return p, nil
}

// rebalance spreads the instances evenly over n containers, moving as few
// as it can: containers beyond n are emptied, every container keeps at most
// its share (the newest tasks leave first), and the moved and new instances
// are dealt round robin to the containers below their share.
func rebalance(s *Spec, strat Strategy, st *State, n int, pool []plan.Instance) {
	for len(st.Bins) > n {
		last := st.Bins[len(st.Bins)-1]
		pool = append(pool, last.Instances...)
		st.Bins = st.Bins[:len(st.Bins)-1]
	}
	for len(st.Bins) < n {
		st.NewBin()
	}
	total := len(pool)
	for _, b := range st.Bins {
		total += len(b.Instances)
	}
	// Shares: total/n each, one more for the fullest containers.
	quota := make(map[*Bin]int, n)
	order := append([]*Bin(nil), st.Bins...)
	sort.SliceStable(order, func(i, j int) bool { return len(order[i].Instances) > len(order[j].Instances) })
	for i, b := range order {
		quota[b] = total / n
		if i < total%n {
			quota[b]++
		}
	}
	for _, b := range st.Bins {
		for len(b.Instances) > quota[b] {
			pool = append(pool, b.popNewest())
		}
	}
	if strat.CheckFit {
		pool = append(pool, evictOverfull(s, st.Bins)...)
	}
	cursor := 0
	for _, in := range s.Sort(pool) {
		placed := false
		for i := 0; i < len(st.Bins) && !placed; i++ {
			j := (cursor + i) % len(st.Bins)
			b := st.Bins[j]
			if len(b.Instances) < quota[b] && (!strat.CheckFit || s.Fits(b.Used, len(b.Instances)+1, in.Resources)) {
				b.Add(in)
				cursor, placed = (j+1)%len(st.Bins), true
			}
		}
		if placed {
			continue
		}
		// No container below its share fits (only with CheckFit).
		for _, b := range st.Bins {
			if s.Fits(b.Used, len(b.Instances)+1, in.Resources) {
				b.Add(in)
				placed = true
				break
			}
		}
		if !placed {
			b := st.NewBin()
			quota[b] = total
			b.Add(in)
		}
	}
}

// evictOverfull takes the newest instances out of every container that no
// longer fits the capacity (instance resources changed since the current
// plan) and returns them.
func evictOverfull(s *Spec, bins []*Bin) []plan.Instance {
	var out []plan.Instance
	for _, b := range bins {
		for len(b.Instances) > 0 && !s.Fits(b.Used, len(b.Instances), plan.Resources{}) {
			out = append(out, b.popNewest())
		}
	}
	return out
}

func checkParallelism(t *topology.Topology, parallelism map[string]int) error {
	names := make([]string, 0, len(parallelism))
	for n := range parallelism {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		c, ok := t.Component(n)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("parallelism names component %q, which is not in topology %q", n, t.Name))
		case parallelism[n] != c.Parallelism:
			errs = append(errs, fmt.Errorf("parallelism of component %q is %d but the topology says %d; pass the topology with the new parallelism applied",
				n, parallelism[n], c.Parallelism))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("repack: %w", errors.Join(errs...))
	}
	return nil
}

// checkCurrent checks that the current plan is consistent with itself and
// with t's components; it returns the task count per component and the
// highest task id.
func checkCurrent(t *topology.Topology, current *plan.PackingPlan) (map[string]int, int, error) {
	ids := map[int]bool{}
	containers := map[int]bool{}
	indexes := map[string]map[int]bool{}
	tasks := map[string]int{}
	maxID := 0
	for _, c := range current.Containers {
		if c.ID < 1 || containers[c.ID] {
			return nil, 0, fmt.Errorf("repack: current plan: container id %d is below 1 or repeated", c.ID)
		}
		containers[c.ID] = true
		for _, in := range c.Instances {
			if _, ok := t.Component(in.Component); !ok {
				return nil, 0, fmt.Errorf("repack: current plan has component %q, which is not in topology %q (repacking cannot remove components)", in.Component, t.Name)
			}
			if in.TaskID < 1 || ids[in.TaskID] {
				return nil, 0, fmt.Errorf("repack: current plan: task id %d is below 1 or repeated", in.TaskID)
			}
			ids[in.TaskID] = true
			maxID = max(maxID, in.TaskID)
			if indexes[in.Component] == nil {
				indexes[in.Component] = map[int]bool{}
			}
			indexes[in.Component][in.Index] = true
			tasks[in.Component]++
		}
	}
	count := map[string]int{}
	names := make([]string, 0, len(tasks))
	for name := range tasks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		n := tasks[name]
		for i := range n {
			if !indexes[name][i] {
				return nil, 0, fmt.Errorf("repack: current plan: component %q has %d tasks but no task with index %d (indexes must be 0..%d, each once)",
					name, n, i, n-1)
			}
		}
		count[name] = n
	}
	return count, maxID, nil
}
