package binpack

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
)

// Capacity says how an algorithm bounds its containers.
type Capacity int

const (
	// LimitsOnly (roundrobin): a container is bounded only in the dimensions
	// whose topology.container.max.* is set, and padding is the fixed
	// amount.
	LimitsOnly Capacity = iota + 1
	// DefaultCapacity (ffd, rcrr): a dimension without a limit is bounded by
	// DefaultMaxInstances default instances, and padding is the larger of
	// the fixed amount and the percentage of the capacity.
	DefaultCapacity
)

// Spec is everything an algorithm needs to pack one topology.
type Spec struct {
	Settings
	// Containers is the topology's topology.containers (1 when unset).
	Containers int
	// Res is the resource of one instance of each component.
	Res map[string]plan.Resources
	// Order ranks the components for placement: ram descending, then cpu
	// descending, then definition order.
	Order []string
	rank  map[string]int
	// Cap is the container capacity; meaningful only where Bounded.
	Cap     plan.Resources
	Bounded [3]bool
	// FromLimit says the capacity of a dimension comes from
	// topology.container.max.* (else from the default capacity).
	FromLimit [3]bool
	// Pad is the padding added to every container.
	Pad plan.Resources
	// Tasks is the total number of tasks.
	Tasks int
}

// NewSpec derives the packing spec of t. Invalid topology settings give an
// error naming the component and key; an instance that cannot fit any
// container gives an error wrapping spi.ErrCannotFit.
func NewSpec(t *topology.Topology, s Settings, mode Capacity) (*Spec, error) {
	if t == nil {
		return nil, errors.New("packing: topology is nil")
	}
	if len(t.Components) == 0 {
		return nil, fmt.Errorf("packing: topology %q has no components", t.Name)
	}
	sp := &Spec{Settings: s, Res: map[string]plan.Resources{}, rank: map[string]int{}}
	var errs []error
	sp.Containers = topology.DefaultContainers
	if raw := strings.TrimSpace(t.Config[topology.KeyContainers]); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("topology setting %s: %q is not a whole number of at least 1", topology.KeyContainers, raw))
		}
		sp.Containers = n
	}
	for _, c := range t.Components {
		if _, dup := sp.Res[c.Name]; dup {
			errs = append(errs, fmt.Errorf("component %q is defined twice", c.Name))
			continue
		}
		if c.Parallelism < 1 {
			errs = append(errs, fmt.Errorf("component %q: parallelism %d must be at least 1", c.Name, c.Parallelism))
		}
		sp.Tasks += c.Parallelism
		r := s.Instance
		for _, d := range Dims {
			raw := t.Setting(c.Name, d.ComponentKey())
			if strings.TrimSpace(raw) == "" {
				continue
			}
			v, err := parseSetting(d, raw)
			if err == nil && (v < 0 || (v == 0 && d != Disk)) {
				err = fmt.Errorf("%q must be greater than 0", raw)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("component %q: setting %s: %v", c.Name, d.ComponentKey(), err))
				continue
			}
			d.Set(&r, v)
		}
		sp.Res[c.Name] = r
		sp.Order = append(sp.Order, c.Name)
	}
	for _, d := range Dims {
		raw := strings.TrimSpace(t.Config[d.ContainerKey()])
		if raw == "" {
			if mode == DefaultCapacity {
				sp.Bounded[d] = true
				d.Set(&sp.Cap, DefaultMaxInstances*d.Get(s.Instance))
			}
			continue
		}
		v, err := parseSetting(d, raw)
		if err == nil && v <= 0 {
			err = fmt.Errorf("%q must be greater than 0", raw)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("topology setting %s: %v", d.ContainerKey(), err))
			continue
		}
		sp.Bounded[d], sp.FromLimit[d] = true, true
		d.Set(&sp.Cap, v)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("packing topology %q: %w", t.Name, errors.Join(errs...))
	}
	sp.Pad = s.Padding
	if mode == DefaultCapacity {
		for _, d := range Dims {
			pct := d.Get(sp.Cap) * s.PaddingPercentage / 100
			if d != CPU {
				pct = math.Ceil(pct)
			}
			if pct > d.Get(sp.Pad) {
				d.Set(&sp.Pad, pct)
			}
		}
	}
	// Placement order: ram, then cpu, descending; definition order on ties.
	sort.SliceStable(sp.Order, func(i, j int) bool {
		a, b := sp.Res[sp.Order[i]], sp.Res[sp.Order[j]]
		if a.RAM != b.RAM {
			return a.RAM > b.RAM
		}
		return a.CPU > b.CPU
	})
	for i, n := range sp.Order {
		sp.rank[n] = i
	}
	if err := sp.checkInstances(t); err != nil {
		return nil, err
	}
	return sp, nil
}

// PadFor is what a container of n instances reserves besides them: in
// each dimension the larger of the padding (Pad) and the daemons'
// overhead, Overhead + n × OverheadPerInstance.
func (s *Spec) PadFor(n int) plan.Resources {
	var r plan.Resources
	for _, d := range Dims {
		d.Set(&r, max(d.Get(s.Pad), d.Get(s.Overhead)+float64(n)*d.Get(s.OverheadPerInstance)))
	}
	return r
}

// Usable is what the instances of a container of one instance may use in
// d.
func (s *Spec) Usable(d Dim) float64 { return s.UsableFor(d, 1) }

// UsableFor is what the instances of a container of n instances may use
// in d.
func (s *Spec) UsableFor(d Dim, n int) float64 { return d.Get(s.Cap) - d.Get(s.PadFor(n)) }

// capacityText explains where the capacity of d comes from.
func (s *Spec) capacityText(d Dim) string {
	if s.FromLimit[d] {
		return fmt.Sprintf("%s is %s", d.ContainerKey(), d.Amount(d.Get(s.Cap)))
	}
	return fmt.Sprintf("the default capacity is %s, that is %d × %s as %s is unset",
		d.Amount(d.Get(s.Cap)), DefaultMaxInstances, d.DefaultKey(), d.ContainerKey())
}

func (s *Spec) checkInstances(t *topology.Topology) error {
	var errs []error
	for _, d := range Dims {
		if s.Bounded[d] && s.Usable(d) <= 0 {
			errs = append(errs, fmt.Errorf("%w: the %s padding of %s leaves no room for instances in a container: %s; raise %s or lower %s/%s",
				spi.ErrCannotFit, d, d.Amount(d.Get(s.PadFor(1))), s.capacityText(d), d.ContainerKey(), d.PaddingKey(), KeyPaddingPercentage))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, c := range t.Components {
		r := s.Res[c.Name]
		for _, d := range Dims {
			if !s.Bounded[d] || d.Get(r) <= s.Usable(d)+eps(d) {
				continue
			}
			errs = append(errs, fmt.Errorf("%w: component %q needs %s per instance but a container holds at most %s (%s, minus %s padding); lower %s for %s or raise %s",
				spi.ErrCannotFit, c.Name, d.Format(d.Get(r)), d.Amount(s.Usable(d)), s.capacityText(d), d.Amount(d.Get(s.PadFor(1))),
				d.ComponentKey(), c.Name, d.ContainerKey()))
		}
	}
	return errors.Join(errs...)
}

func eps(d Dim) float64 {
	if d == CPU {
		return cpuEpsilon
	}
	return 0
}

// Fits reports whether a container whose instances use used can also hold
// r, so that it has n instances, padding or overhead included.
func (s *Spec) Fits(used plan.Resources, n int, r plan.Resources) bool {
	for _, d := range Dims {
		if s.Bounded[d] && d.Get(used)+d.Get(r) > s.UsableFor(d, n)+eps(d) {
			return false
		}
	}
	return true
}

// Instances returns the tasks of t (numbered by plan.TaskIDs) with their
// resources, in placement order: components by Order, then index.
func (s *Spec) Instances(t *topology.Topology) []plan.Instance {
	return s.Sort(plan.TaskIDs(t))
}

// Sort sets each instance's resources and sorts them in placement order.
func (s *Spec) Sort(in []plan.Instance) []plan.Instance {
	for i := range in {
		in[i].Resources = s.Res[in[i].Component]
	}
	sort.SliceStable(in, func(i, j int) bool {
		a, b := in[i], in[j]
		if ra, rb := s.rank[a.Component], s.rank[b.Component]; ra != rb {
			return ra < rb
		}
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return a.TaskID < b.TaskID
	})
	return in
}

// CheckBins verifies that every container fits the capacity; an overfull
// container gives an error wrapping spi.ErrCannotFit that names the
// container, the resource and the component using the most of it.
func (s *Spec) CheckBins(bins []*Bin) error {
	for _, b := range bins {
		for _, d := range Dims {
			n := len(b.Instances)
			if !s.Bounded[d] || d.Get(b.Used) <= s.UsableFor(d, n)+eps(d) {
				continue
			}
			pad := d.Get(s.PadFor(n))
			top, amount := b.largest(d)
			return fmt.Errorf("%w: container %d needs %s (%d instances plus %s padding) but %s; component %q uses the most (%s); "+
				"raise %s, spread the instances over more containers (topology.containers), or lower %s for %s",
				spi.ErrCannotFit, b.ID, d.Format(d.Get(b.Used)+pad), n, d.Format(pad),
				s.capacityText(d), top, d.Format(amount), d.ContainerKey(), d.ComponentKey(), top)
		}
	}
	return nil
}

// Plan builds the packing plan from bins: empty bins are dropped, the rest
// numbered 1..N in order, instances sorted by task id, and each container's
// required resources set to its instances plus padding.
func (s *Spec) Plan(topologyID string, bins []*Bin) *plan.PackingPlan {
	p := &plan.PackingPlan{TopologyID: topologyID}
	for _, b := range bins {
		if len(b.Instances) == 0 {
			continue
		}
		ins := append([]plan.Instance(nil), b.Instances...)
		sort.Slice(ins, func(i, j int) bool { return ins[i].TaskID < ins[j].TaskID })
		var used plan.Resources
		for _, in := range ins {
			used = used.Add(in.Resources)
		}
		p.Containers = append(p.Containers, plan.Container{ID: len(p.Containers) + 1, Instances: ins, Required: used.Add(s.PadFor(len(ins)))})
	}
	return p
}

// Bin is a container being filled.
type Bin struct {
	ID        int
	Instances []plan.Instance
	// Used is the sum of the instances' resources, without padding.
	Used plan.Resources
}

// Add puts in into b.
func (b *Bin) Add(in plan.Instance) {
	b.Instances = append(b.Instances, in)
	b.Used = b.Used.Add(in.Resources)
}

// removeAt takes the i-th instance out of b.
func (b *Bin) removeAt(i int) plan.Instance {
	in := b.Instances[i]
	b.Instances = append(b.Instances[:i], b.Instances[i+1:]...)
	b.Used = plan.Resources{}
	for _, x := range b.Instances {
		b.Used = b.Used.Add(x.Resources)
	}
	return in
}

// popNewest takes the instance with the highest task id out of b.
func (b *Bin) popNewest() plan.Instance {
	hi := 0
	for i, in := range b.Instances {
		if in.TaskID > b.Instances[hi].TaskID {
			hi = i
		}
	}
	return b.removeAt(hi)
}

// largest returns the component using the most of d in b (first in task
// id order on ties) and the amount it uses.
func (b *Bin) largest(d Dim) (string, float64) {
	use := map[string]float64{}
	var order []string
	ins := append([]plan.Instance(nil), b.Instances...)
	sort.Slice(ins, func(i, j int) bool { return ins[i].TaskID < ins[j].TaskID })
	for _, in := range ins {
		if _, ok := use[in.Component]; !ok {
			order = append(order, in.Component)
		}
		use[in.Component] += d.Get(in.Resources)
	}
	best := ""
	for _, c := range order {
		if best == "" || use[c] > use[best] {
			best = c
		}
	}
	return best, use[best]
}

// TooManyContainers is the error for a container count above the number
// of tasks.
func TooManyContainers(what string, n, tasks int) error {
	return fmt.Errorf("%s is %d but the topology has only %d tasks; use at most %d containers", what, n, tasks, tasks)
}
