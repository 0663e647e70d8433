package rcrr_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/packing/packingtest"
	"github.com/egret-stream/egret/packing/rcrr"
	"github.com/egret-stream/egret/packing/roundrobin"
)

type comp = packingtest.Comp

func tasksPerContainer(p *plan.PackingPlan) [][]int {
	var out [][]int
	for _, c := range p.Containers {
		var ids []int
		for _, in := range c.Instances {
			ids = append(ids, in.TaskID)
		}
		out = append(out, ids)
	}
	return out
}

func TestSameAsRoundRobinWhenEverythingFits(t *testing.T) {
	topo := packingtest.NewTopology("fits", map[string]string{topology.KeyContainers: "2"},
		comp{Name: "spout", Parallelism: 2}, comp{Name: "bolt", Parallelism: 3})
	p, _ := rcrr.New(nil)
	got, err := p.Pack(topo)
	if err != nil {
		t.Fatal(err)
	}
	rr, _ := roundrobin.New(nil)
	want, err := rr.Pack(topo)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tasksPerContainer(got), tasksPerContainer(want)) {
		t.Fatalf("rcrr %v, roundrobin %v", tasksPerContainer(got), tasksPerContainer(want))
	}
}

func TestAddsContainersUntilRoundRobinFits(t *testing.T) {
	// 3 usable cores per container (4 minus 1 padding). Two containers
	// would hold 4 instances each; three hold 3, 3 and 2.
	topo := packingtest.NewTopology("grow", map[string]string{topology.KeyContainers: "2", topology.KeyContainerCPU: "4"},
		comp{Name: "s", Parallelism: 8})
	p, _ := rcrr.New(nil)
	got, err := p.Pack(topo)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{1, 4, 7}, {2, 5, 8}, {3, 6}}
	if g := tasksPerContainer(got); !reflect.DeepEqual(g, want) {
		t.Fatalf("containers %v, want %v", g, want)
	}
}

func TestTooManyContainers(t *testing.T) {
	topo := packingtest.NewTopology("many", map[string]string{topology.KeyContainers: "4"}, comp{Name: "s", Parallelism: 3})
	p, _ := rcrr.New(nil)
	if _, err := p.Pack(topo); err == nil || !strings.Contains(err.Error(), topology.KeyContainers) {
		t.Fatalf("err = %v", err)
	}
}

func TestRepackSkipsFullContainers(t *testing.T) {
	topo := packingtest.NewTopology("grow", map[string]string{topology.KeyContainers: "2", topology.KeyContainerCPU: "4"},
		comp{Name: "s", Parallelism: 8})
	p, _ := rcrr.New(nil)
	cur, err := p.Pack(topo) // {1,4,7} {2,5,8} {3,6}
	if err != nil {
		t.Fatal(err)
	}
	next := packingtest.WithParallelism(topo, map[string]int{"s": 10})
	got, err := p.Repack(next, cur, map[string]int{"s": 10}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Dealing resumes at position 8 mod 3 = container 3, which takes task
	// 9; containers 1, 2 and 3 are then full, so task 10 opens container 4.
	want := [][]int{{1, 4, 7}, {2, 5, 8}, {3, 6, 9}, {10}}
	if g := tasksPerContainer(got); !reflect.DeepEqual(g, want) {
		t.Fatalf("containers %v, want %v", g, want)
	}
}
