package packingtest

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/packing/internal/binpack"
)

// CheckPlan verifies the properties every packing plan of topo must have
// under cfg: it passes plan.Validate; it carries topo's id; container ids
// are 1..N and no container is empty; every task has the id, component and
// index of plan.TaskIDs (when fresh is true, i.e. for Pack) and the
// resources its component asks for; each container requires at least its
// instances plus the larger of the fixed padding and the daemons' overhead
// (egret.packing.overhead.*: base + instances × per instance); and it fits every
// topology.container.max.* that is set.
func CheckPlan(topo *topology.Topology, cfg spi.Config, p *plan.PackingPlan, fresh bool) error {
	if p == nil {
		return errors.New("plan is nil")
	}
	if err := p.Validate(topo); err != nil {
		return err
	}
	if topo.ID != "" && p.TopologyID != topo.ID {
		return fmt.Errorf("plan topology id is %q, want %q", p.TopologyID, topo.ID)
	}
	settings, err := binpack.ParseSettings(cfg)
	if err != nil {
		return fmt.Errorf("suite cannot read config: %w", err)
	}
	want, limits, err := expected(topo, settings)
	if err != nil {
		return err
	}
	ids := make([]int, 0, len(p.Containers))
	for _, c := range p.Containers {
		ids = append(ids, c.ID)
		if len(c.Instances) == 0 {
			return fmt.Errorf("container %d is empty", c.ID)
		}
		var sum plan.Resources
		for _, in := range c.Instances {
			if in.Resources != want[in.Component] {
				return fmt.Errorf("task %d of %q has resources %+v, want %+v", in.TaskID, in.Component, in.Resources, want[in.Component])
			}
			sum = sum.Add(in.Resources)
		}
		reserve := settings.Padding
		for _, d := range binpack.Dims {
			over := d.Get(settings.Overhead) + float64(len(c.Instances))*d.Get(settings.OverheadPerInstance)
			d.Set(&reserve, max(d.Get(reserve), over))
		}
		min := sum.Add(reserve)
		if c.Required.CPU+1e-9 < min.CPU || c.Required.RAM < min.RAM || c.Required.Disk < min.Disk {
			return fmt.Errorf("container %d requires %+v, less than its instances plus padding or daemon overhead %+v", c.ID, c.Required, min)
		}
		for _, d := range binpack.Dims {
			if lim, ok := limits[d]; ok && d.Get(c.Required) > lim+1e-9 {
				return fmt.Errorf("container %d requires %s, above %s %s", c.ID, d.Format(d.Get(c.Required)), d.ContainerKey(), d.Format(lim))
			}
		}
	}
	sort.Ints(ids)
	for i, id := range ids {
		if id != i+1 {
			return fmt.Errorf("container ids are %v, want 1..%d", ids, len(ids))
		}
	}
	if fresh {
		l := p.Layout()
		for _, in := range plan.TaskIDs(topo) {
			if l.ComponentOf[in.TaskID] != in.Component || l.IndexOf[in.TaskID] != in.Index {
				return fmt.Errorf("task %d is %s[%d], want %s[%d] as numbered by plan.TaskIDs",
					in.TaskID, l.ComponentOf[in.TaskID], l.IndexOf[in.TaskID], in.Component, in.Index)
			}
		}
	}
	return nil
}

// expected computes each component's instance resources and the container
// limits that are set, independently of the algorithms.
func expected(topo *topology.Topology, s binpack.Settings) (map[string]plan.Resources, map[binpack.Dim]float64, error) {
	want := map[string]plan.Resources{}
	for _, c := range topo.Components {
		r := s.Instance
		for _, d := range binpack.Dims {
			if raw := topo.Setting(c.Name, d.ComponentKey()); raw != "" {
				v, err := number(d, raw)
				if err != nil {
					return nil, nil, err
				}
				d.Set(&r, v)
			}
		}
		want[c.Name] = r
	}
	limits := map[binpack.Dim]float64{}
	for _, d := range binpack.Dims {
		if raw := topo.Config[d.ContainerKey()]; raw != "" {
			v, err := number(d, raw)
			if err != nil {
				return nil, nil, err
			}
			limits[d] = v
		}
	}
	return want, limits, nil
}

func number(d binpack.Dim, raw string) (float64, error) {
	if d == binpack.CPU {
		return strconv.ParseFloat(strings.TrimSpace(raw), 64)
	}
	b, err := topology.ParseBytes(raw)
	return float64(b), err
}
