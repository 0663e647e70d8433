package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/egret-stream/egret/core/plan"
)

// Output formats.
const (
	FormatTable = "table"
	FormatJSON  = "json"
)

// Plan is the JSON form of a packing plan.
type Plan struct {
	TopologyID string      `json:"topologyId"`
	Containers []Container `json:"containers"`
	Total      Resources   `json:"total"`
}

// Container is the JSON form of one container.
type Container struct {
	ID        int        `json:"id"`
	Required  Resources  `json:"required"`
	Instances []Instance `json:"instances"`
}

// Instance is the JSON form of one instance.
type Instance struct {
	Component string    `json:"component"`
	TaskID    int       `json:"taskId"`
	Index     int       `json:"index"`
	Resources Resources `json:"resources"`
}

// Resources is the JSON form of an amount of resources.
type Resources struct {
	CPU       float64 `json:"cpu"`
	RAMBytes  int64   `json:"ramBytes"`
	DiskBytes int64   `json:"diskBytes"`
}

func resources(r plan.Resources) Resources {
	return Resources{CPU: r.CPU, RAMBytes: r.RAM, DiskBytes: r.Disk}
}

// FromPlan converts p to its JSON form: containers in id order, instances
// in task id order.
func FromPlan(p *plan.PackingPlan) Plan {
	out := Plan{TopologyID: p.TopologyID, Containers: []Container{}}
	var total plan.Resources
	for _, c := range p.Containers {
		jc := Container{ID: c.ID, Required: resources(c.Required), Instances: []Instance{}}
		for _, in := range c.Instances {
			jc.Instances = append(jc.Instances, Instance{Component: in.Component, TaskID: in.TaskID, Index: in.Index, Resources: resources(in.Resources)})
		}
		sort.SliceStable(jc.Instances, func(i, j int) bool { return jc.Instances[i].TaskID < jc.Instances[j].TaskID })
		out.Containers = append(out.Containers, jc)
		total = total.Add(c.Required)
	}
	sort.SliceStable(out.Containers, func(i, j int) bool { return out.Containers[i].ID < out.Containers[j].ID })
	out.Total = resources(total)
	return out
}

// Render writes p to w in format "table" or "json".
func Render(p *plan.PackingPlan, w io.Writer, format string) error {
	if p == nil {
		return errors.New("render: packing plan is nil")
	}
	doc := FromPlan(p)
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("render: write json: %w", err)
		}
		return nil
	case FormatTable:
		return table(doc, w)
	default:
		return fmt.Errorf("render: unknown format %q (use %s or %s)", format, FormatTable, FormatJSON)
	}
}

// table writes one row per container: id, required cpu, ram and disk in
// human units, and the instances as component:task; then a total row.
func table(doc Plan, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tCPU\tRAM\tDISK\tINSTANCES")
	n := 0
	for _, c := range doc.Containers {
		names := make([]string, len(c.Instances))
		for i, in := range c.Instances {
			names[i] = fmt.Sprintf("%s:%d", in.Component, in.TaskID)
		}
		n += len(c.Instances)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", c.ID, plan.FormatCPU(c.Required.CPU),
			plan.FormatBytes(c.Required.RAMBytes), plan.FormatBytes(c.Required.DiskBytes), strings.Join(names, " "))
	}
	fmt.Fprintf(tw, "total\t%s\t%s\t%s\t%d instances in %d containers\n", plan.FormatCPU(doc.Total.CPU),
		plan.FormatBytes(doc.Total.RAMBytes), plan.FormatBytes(doc.Total.DiskBytes), n, len(doc.Containers))
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("render: write table: %w", err)
	}
	return nil
}
