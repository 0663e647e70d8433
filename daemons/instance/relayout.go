package instance

import (
	"fmt"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/daemons/wire"
)

// Relayout is a new task layout prepared for a running instance: the
// topology with the new parallelism and the routes of the instance's
// streams toward the new task sets. PrepareRelayout builds it outside the
// instance's goroutine; the instance switches to it between two calls of
// its component (MsgLayout), so a rescale that keeps the task where it is
// does not restart it and its in-memory state survives.
type Relayout struct {
	topology *api.Topology
	layout   *plan.Layout
	routes   map[string]*route
	maxTask  int
}

// PrepareRelayout checks that task keeps its component and container in
// layout and builds the routes the instance will use. An error means the
// instance cannot follow the change live and must restart.
func PrepareRelayout(t *api.Topology, layout *plan.Layout, task int, component string, container int) (*Relayout, error) {
	if got, ok := layout.ComponentOf[task]; !ok || got != component {
		return nil, fmt.Errorf("task %d of %q is not a task of that component in the new layout", task, component)
	}
	if c := layout.ContainerOf[task]; c != container {
		return nil, fmt.Errorf("the new layout moves task %d from container %d to %d", task, container, c)
	}
	rng := rand.New(rand.NewPCG(uint64(task), uint64(time.Now().UnixNano())))
	routes, err := buildRoutes(t, wire.NewStreamTable(t.Logical), layout, component, container, rng, t.Types)
	if err != nil {
		return nil, fmt.Errorf("task %d: %w", task, err)
	}
	r := &Relayout{topology: t, layout: layout, routes: routes}
	for id := range layout.ComponentOf {
		r.maxTask = max(r.maxTask, id)
	}
	return r, nil
}

// relayout switches the instance to r: what its emitter buffered is sent
// first (toward the tasks of the old layout), then tuples go by the new
// routes. Context.ComponentTasks and TaskIndex answer with the new layout
// from then on.
func (in *Instance) relayout(r *Relayout) {
	in.em.flushAll()
	comp, ok := r.topology.Logical.Component(in.comp.Name)
	if !ok {
		// PrepareRelayout checked the layout, which holds the component.
		in.log.Error("the new layout's topology lacks this component; keeping the current layout")
		return
	}
	in.cfg.Topology, in.cfg.Layout, in.comp = r.topology, r.layout, comp
	in.em.routes, in.em.last, in.em.lastStream = r.routes, nil, ""
	if n := r.maxTask + 1; n > len(in.em.out) {
		in.em.out = append(in.em.out, make([]*wire.Batch, n-len(in.em.out))...)
	}
	in.metrics.Relayouts.Add(1)
	in.log.Info("task layout changed; routing by the new layout without a restart", zap.Int("tasks", len(r.layout.ComponentOf)))
}
