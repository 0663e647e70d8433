package instance

import (
	"fmt"
	"math/rand/v2"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/core/tuple"
	"github.com/egret-stream/egret/daemons/wire"
)

// target is one subscription to a stream: the subscribing bolt's tasks and
// how to choose among them.
type target struct {
	bolt     string
	grouping topology.Grouping
	tasks    []int
	// shuffle is the task list round-robin walks: the local tasks for
	// local-or-shuffle when there are any, else every task.
	shuffle  []int
	fieldIdx []int
	// maxParallelism is the bolt's number of key groups (fields grouping).
	maxParallelism int
	custom         api.CustomGroupingFunc
	types          *tuple.Registry
	next           int
}

// route is everything an emitter needs for one of its streams.
type route struct {
	index   uint32
	info    *wire.StreamInfo
	targets []*target
}

// buildRoutes computes the routes of component's streams for the task
// running in container.
func buildRoutes(t *api.Topology, streams *wire.StreamTable, layout *plan.Layout, component string, container int, rng *rand.Rand, types *tuple.Registry) (map[string]*route, error) {
	c, ok := t.Logical.Component(component)
	if !ok {
		return nil, fmt.Errorf("component %q is not in topology %q", component, t.Logical.Name)
	}
	routes := map[string]*route{}
	for _, s := range c.Outputs {
		idx, _ := streams.Index(component, s.ID)
		info, err := streams.Stream(idx)
		if err != nil {
			return nil, err
		}
		r := &route{index: idx, info: info}
		for _, sub := range t.Logical.Subscribers(component, s.ID) {
			tg := &target{bolt: sub.Bolt, grouping: sub.Grouping, tasks: layout.Tasks[sub.Bolt], types: types}
			if len(tg.tasks) == 0 {
				return nil, fmt.Errorf("bolt %q has no tasks in the packing plan", sub.Bolt)
			}
			tg.shuffle = tg.tasks
			switch sub.Grouping {
			case topology.Fields:
				tg.maxParallelism = t.Logical.MaxParallelism(sub.Bolt)
				if err := keygroup.Check(len(tg.tasks), tg.maxParallelism); err != nil {
					return nil, fmt.Errorf("bolt %q: %w", sub.Bolt, err)
				}
				for _, f := range sub.Fields {
					tg.fieldIdx = append(tg.fieldIdx, indexOf(s.Fields, f))
				}
			case topology.LocalOrShuffle:
				var local []int
				for _, task := range tg.tasks {
					if layout.ContainerOf[task] == container {
						local = append(local, task)
					}
				}
				if len(local) > 0 {
					tg.shuffle = local
				}
			case topology.Custom:
				tg.custom = t.CustomGroupings[sub.CustomName]
				if tg.custom == nil {
					return nil, fmt.Errorf("bolt %q: custom grouping %q is not registered in this binary", sub.Bolt, sub.CustomName)
				}
			}
			tg.next = rng.IntN(len(tg.shuffle))
			r.targets = append(r.targets, tg)
		}
		routes[s.ID] = r
	}
	return routes, nil
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// choose appends the destination tasks of a tuple with the given values to
// dst.
func (tg *target) choose(values []any, dst []int) ([]int, error) {
	switch tg.grouping {
	case topology.Shuffle, topology.None, topology.LocalOrShuffle:
		dst = append(dst, tg.shuffle[tg.next])
		tg.next++
		if tg.next == len(tg.shuffle) {
			tg.next = 0
		}
	case topology.Fields:
		h, err := tuple.FieldsHash(tg.types, values, tg.fieldIdx)
		if err != nil {
			return dst, fmt.Errorf("fields grouping toward %q: %w", tg.bolt, err)
		}
		dst = append(dst, tg.tasks[keygroup.TaskIndex(h, len(tg.tasks), tg.maxParallelism)])
	case topology.All:
		dst = append(dst, tg.tasks...)
	case topology.Global:
		dst = append(dst, tg.tasks[0])
	case topology.Direct:
		return dst, fmt.Errorf("stream is direct: use EmitDirect to reach bolt %q", tg.bolt)
	case topology.Custom:
		chosen := tg.custom(values, tg.tasks)
		for _, task := range chosen {
			if !containsInt(tg.tasks, task) {
				return dst, fmt.Errorf("custom grouping toward %q chose task %d, which is not one of its tasks %v", tg.bolt, task, tg.tasks)
			}
		}
		dst = append(dst, chosen...)
	}
	return dst, nil
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
