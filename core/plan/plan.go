package plan

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/egret-stream/egret/core/topology"
)

// Resources is an amount of cpu (cores), ram and disk (bytes).
type Resources struct {
	CPU  float64
	RAM  int64
	Disk int64
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{CPU: r.CPU + o.CPU, RAM: r.RAM + o.RAM, Disk: r.Disk + o.Disk}
}

// Fits reports whether r fits in limit.
func (r Resources) Fits(limit Resources) bool {
	return r.CPU <= limit.CPU+1e-9 && r.RAM <= limit.RAM && r.Disk <= limit.Disk
}

// Instance is one task placed in a container.
type Instance struct {
	Component string
	// TaskID is unique in the topology and stable across repacking.
	TaskID int
	// Index is the task's index among its component's tasks.
	Index     int
	Resources Resources
}

// Container is one container of a packing plan. Container ids start at 1;
// container 0 (the topology manager's) is not part of the plan.
type Container struct {
	ID        int
	Instances []Instance
	// Required is what the instances need, with padding.
	Required Resources
}

// Needs returns what a resource manager must give the container: Required,
// or the sum of its instances' resources when the plan left it unset.
func (c Container) Needs() Resources {
	if c.Required != (Resources{}) {
		return c.Required
	}
	var r Resources
	for _, in := range c.Instances {
		r = r.Add(in.Resources)
	}
	return r
}

// Resized returns the ids (ascending) of the containers of both plans
// whose needs differ.
func Resized(current, next *PackingPlan) []int {
	was := map[int]Resources{}
	for _, c := range current.Containers {
		was[c.ID] = c.Needs()
	}
	var out []int
	for _, c := range next.Containers {
		if r, ok := was[c.ID]; ok && r != c.Needs() {
			out = append(out, c.ID)
		}
	}
	sort.Ints(out)
	return out
}

// PackingPlan places every task of a topology in a container.
type PackingPlan struct {
	TopologyID string
	Containers []Container
}

// Layout is the task placement the runtime routes with.
type Layout struct {
	// Tasks maps each component to its task ids, ascending.
	Tasks map[string][]int
	// ComponentOf maps a task id to its component.
	ComponentOf map[int]string
	// ContainerOf maps a task id to its container id.
	ContainerOf map[int]int
	// IndexOf maps a task id to its index among its component's tasks.
	IndexOf map[int]int
}

// Layout derives the task layout of the plan.
func (p *PackingPlan) Layout() *Layout {
	l := &Layout{Tasks: map[string][]int{}, ComponentOf: map[int]string{}, ContainerOf: map[int]int{}, IndexOf: map[int]int{}}
	for _, c := range p.Containers {
		for _, in := range c.Instances {
			l.Tasks[in.Component] = append(l.Tasks[in.Component], in.TaskID)
			l.ComponentOf[in.TaskID] = in.Component
			l.ContainerOf[in.TaskID] = c.ID
			l.IndexOf[in.TaskID] = in.Index
		}
	}
	for _, ids := range l.Tasks {
		sort.Ints(ids)
	}
	return l
}

// AllTasks returns every task id, ascending.
func (l *Layout) AllTasks() []int {
	out := make([]int, 0, len(l.ComponentOf))
	for id := range l.ComponentOf {
		out = append(out, id)
	}
	sort.Ints(out)
	return out
}

// Fingerprint identifies the layout: equal layouts (same tasks with the
// same components, indexes and containers) have equal fingerprints. It is
// never 0.
func (l *Layout) Fingerprint() uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, id := range l.AllTasks() {
		for _, v := range []int{id, l.ContainerOf[id], l.IndexOf[id]} {
			binary.LittleEndian.PutUint64(b[:], uint64(v))
			h.Write(b[:])
		}
		h.Write([]byte(l.ComponentOf[id]))
		h.Write([]byte{0})
	}
	return h.Sum64() | 1
}

// TaskIDs assigns task ids to the tasks of t: components in definition
// order, ids from 1. Packing algorithms use it so every algorithm numbers
// tasks the same way.
func TaskIDs(t *topology.Topology) []Instance {
	var out []Instance
	id := 1
	for _, c := range t.Components {
		for i := 0; i < c.Parallelism; i++ {
			out = append(out, Instance{Component: c.Name, TaskID: id, Index: i})
			id++
		}
	}
	return out
}

// SingleContainer packs every task of t into container 1; the in-process
// runner uses it.
func SingleContainer(t *topology.Topology) *PackingPlan {
	return &PackingPlan{TopologyID: t.ID, Containers: []Container{{ID: 1, Instances: TaskIDs(t)}}}
}

// Validate checks that the plan places every task of t exactly once with
// consistent ids.
func (p *PackingPlan) Validate(t *topology.Topology) error {
	seen := map[int]bool{}
	count := map[string]int{}
	for _, c := range p.Containers {
		if c.ID < 1 {
			return fmt.Errorf("packing plan: container id %d must be at least 1", c.ID)
		}
		for _, in := range c.Instances {
			if seen[in.TaskID] {
				return fmt.Errorf("packing plan: task %d placed twice", in.TaskID)
			}
			seen[in.TaskID] = true
			count[in.Component]++
		}
	}
	for _, c := range t.Components {
		if count[c.Name] != c.Parallelism {
			return fmt.Errorf("packing plan: component %q has %d tasks, topology wants %d", c.Name, count[c.Name], c.Parallelism)
		}
	}
	return nil
}
