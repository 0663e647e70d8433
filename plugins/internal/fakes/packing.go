package fakes

import (
	"fmt"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
)

// PerComponent packs the tasks of each component into a container of its
// own, each task with 1 cpu, 1 KiB ram and disk. A component with more
// tasks than "test.max.tasks" (default unlimited) does not fit.
type PerComponent struct {
	maxTasks int
}

// RepackingPerComponent is PerComponent with spi.Repacking.
type RepackingPerComponent struct{ PerComponent }

// NewPerComponent is a spi.PackingFactory without Repack.
func NewPerComponent(cfg spi.Config) (spi.Packing, error) {
	n, err := cfg.Int("test.max.tasks", 0)
	if err != nil {
		return nil, err
	}
	return &PerComponent{maxTasks: n}, nil
}

// NewRepackingPerComponent is a spi.PackingFactory with Repack.
func NewRepackingPerComponent(cfg spi.Config) (spi.Packing, error) {
	p, err := NewPerComponent(cfg)
	if err != nil {
		return nil, err
	}
	return &RepackingPerComponent{*p.(*PerComponent)}, nil
}

var taskResources = plan.Resources{CPU: 1, RAM: 1 << 10, Disk: 1 << 10}

// Pack implements spi.Packing.
func (p *PerComponent) Pack(t *topology.Topology) (*plan.PackingPlan, error) {
	pp := &plan.PackingPlan{TopologyID: t.ID}
	index := map[string]int{} // component -> index in pp.Containers
	for _, in := range plan.TaskIDs(t) {
		i, ok := index[in.Component]
		if !ok {
			pp.Containers = append(pp.Containers, plan.Container{ID: len(pp.Containers) + 1})
			i = len(pp.Containers) - 1
			index[in.Component] = i
		}
		c := &pp.Containers[i]
		if p.maxTasks > 0 && len(c.Instances) >= p.maxTasks {
			return nil, fmt.Errorf("component %q needs more than %d tasks in one container: %w", in.Component, p.maxTasks, spi.ErrCannotFit)
		}
		in.Resources = taskResources
		c.Instances = append(c.Instances, in)
		c.Required = c.Required.Add(taskResources)
	}
	return pp, nil
}

// Repack implements spi.Repacking: it packs t with the new parallelism;
// containers is ignored.
func (p *RepackingPerComponent) Repack(t *topology.Topology, current *plan.PackingPlan, parallelism map[string]int, _ int) (*plan.PackingPlan, error) {
	if current == nil {
		return nil, fmt.Errorf("repack %s: no current plan", t.Name)
	}
	t = t.Clone()
	for i := range t.Components {
		if n, ok := parallelism[t.Components[i].Name]; ok {
			t.Components[i].Parallelism = n
		}
	}
	for name := range parallelism {
		if _, ok := t.Component(name); !ok {
			return nil, fmt.Errorf("repack %s: no component %q: %w", t.Name, name, spi.ErrNotFound)
		}
	}
	return p.Pack(t)
}
