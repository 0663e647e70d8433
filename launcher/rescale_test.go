package launcher

import (
	"testing"

	"github.com/egret-stream/egret/core/plan"
)

// pp builds a packing plan from container → task ids.
func pp(containers map[int][]int) *plan.PackingPlan {
	p := &plan.PackingPlan{}
	for id, tasks := range containers {
		c := plan.Container{ID: id}
		for _, t := range tasks {
			c.Instances = append(c.Instances, plan.Instance{Component: "b", TaskID: t})
		}
		p.Containers = append(p.Containers, c)
	}
	return p
}

// A rescale pauses a process-per-container topology when it adds a task
// to a running container (whose process restarts), not when the new
// tasks only go to new containers.
func TestAddsToContainers(t *testing.T) {
	cur := pp(map[int][]int{1: {1, 2}, 2: {3}})
	for _, tc := range []struct {
		name string
		next map[int][]int
		want bool
	}{
		{"unchanged", map[int][]int{1: {1, 2}, 2: {3}}, false},
		{"task added to container 2", map[int][]int{1: {1, 2}, 2: {3, 4}}, true},
		{"tasks only in a new container", map[int][]int{1: {1, 2}, 2: {3}, 3: {4, 5}}, false},
		{"task removed", map[int][]int{1: {1}, 2: {3}}, false}, // stopsInstances covers it
	} {
		if got := addsToContainers(cur, pp(tc.next)); got != tc.want {
			t.Errorf("%s: addsToContainers = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !stopsInstances(cur, pp(map[int][]int{1: {1}, 2: {3}})) {
		t.Error("removing task 2: stopsInstances = false")
	}
}
