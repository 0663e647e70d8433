package scale

import (
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
)

// Component names of the measured topology.
const (
	spoutName = "source"
	boltName  = "sink"
)

// buildTopology returns a spout → bolt topology (fields grouping) of n
// containers with tasksPer tasks each, alternately spout and bolt tasks,
// and its packing plan.
func buildTopology(name, id string, n, tasksPer int, effectivelyOnce bool, ckptInterval string) (*topology.Topology, *plan.PackingPlan) {
	p := &plan.PackingPlan{TopologyID: id}
	count := map[string]int{}
	task := 1
	for c := 1; c <= n; c++ {
		pc := plan.Container{ID: c}
		for i := 0; i < tasksPer; i++ {
			comp := spoutName
			if i%2 == 1 {
				comp = boltName
			}
			pc.Instances = append(pc.Instances, plan.Instance{Component: comp, TaskID: task, Index: count[comp],
				Resources: plan.Resources{CPU: 0.5, RAM: 256 << 20, Disk: 256 << 20}})
			count[comp]++
			task++
		}
		p.Containers = append(p.Containers, pc)
	}
	t := &topology.Topology{
		Name: name, ID: id, Config: map[string]string{},
		Components: []topology.Component{
			{Name: spoutName, Kind: topology.Spout, Parallelism: count[spoutName],
				Outputs: []topology.Stream{{ID: topology.DefaultStream, Fields: []string{"key", "value"}}}},
			{Name: boltName, Kind: topology.Bolt, Parallelism: count[boltName],
				Inputs: []topology.Input{{Component: spoutName, Stream: topology.DefaultStream, Grouping: topology.Fields, Fields: []string{"key"}}}},
		},
	}
	if effectivelyOnce {
		t.Config[topology.KeyDeliveryMode] = string(topology.EffectivelyOnce)
		t.Config[topology.KeyCheckpointInterval] = ckptInterval
	}
	return t, p
}
