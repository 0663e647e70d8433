package ffd_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/packing/ffd"
	"github.com/egret-stream/egret/packing/packingtest"
)

const gib = int64(1) << 30

type comp = packingtest.Comp

func mustPack(t *testing.T, cfg spi.Config, topo *topology.Topology) *plan.PackingPlan {
	t.Helper()
	p, err := ffd.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Pack(topo)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// tasksPerContainer lists the task ids of each container.
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

func TestDecreasingOrder(t *testing.T) {
	// Task ids: a 1,2; b 3; c 4; d 5. Placement order: b (3 GiB), c (2 GiB,
	// 2 cpu), d (2 GiB, 1 cpu), a, a. Instances may use 4 GiB per container
	// (5 GiB limit minus the 1 GiB fixed padding, which beats 10%).
	topo := packingtest.NewTopology("ffd", map[string]string{topology.KeyContainerRAM: "5GiB"},
		comp{Name: "a", Parallelism: 2},
		comp{Name: "b", Parallelism: 1, Config: map[string]string{topology.KeyRAM: "3GiB"}},
		comp{Name: "c", Parallelism: 1, Config: map[string]string{topology.KeyRAM: "2GiB", topology.KeyCPU: "2"}},
		comp{Name: "d", Parallelism: 1, Config: map[string]string{topology.KeyRAM: "2GiB"}})
	got := mustPack(t, nil, topo)
	want := [][]int{{1, 3}, {4, 5}, {2}}
	if g := tasksPerContainer(got); !reflect.DeepEqual(g, want) {
		t.Fatalf("containers %v, want %v", g, want)
	}
	if r := got.Containers[1].Required; r != (plan.Resources{CPU: 4, RAM: 5 * gib, Disk: 3 * gib}) {
		t.Fatalf("container 2 requires %+v", r)
	}
}

func TestCPUBreaksRAMTies(t *testing.T) {
	topo := packingtest.NewTopology("tie", map[string]string{topology.KeyContainerCPU: "4"},
		comp{Name: "light", Parallelism: 1},
		comp{Name: "heavy", Parallelism: 1, Config: map[string]string{topology.KeyCPU: "3"}},
		comp{Name: "mid", Parallelism: 1, Config: map[string]string{topology.KeyCPU: "2"}})
	// Usable cpu 3 (4 minus 1 padding): heavy alone, then mid and light.
	if g := tasksPerContainer(mustPack(t, nil, topo)); !reflect.DeepEqual(g, [][]int{{2}, {1, 3}}) {
		t.Fatalf("containers %v", g)
	}
}

// Heron's padding rule: padding = max(fixed, percentage × capacity).
func TestPaddingExamples(t *testing.T) {
	cases := []struct {
		name     string
		cfg      spi.Config
		settings map[string]string
		comp     comp
		want     [][]int
		required []int64 // ram per container
	}{
		{"percentage-wins", nil, map[string]string{topology.KeyContainerRAM: "20GiB"},
			comp{Name: "w", Parallelism: 7, Config: map[string]string{topology.KeyRAM: "3GiB", topology.KeyCPU: "0.5"}},
			// 10% of 20 GiB = 2 GiB > 1 GiB fixed: 18 GiB usable, 6 instances.
			[][]int{{1, 2, 3, 4, 5, 6}, {7}}, []int64{20 * gib, 5 * gib}},
		{"fixed-wins", nil, map[string]string{topology.KeyContainerRAM: "5GiB"},
			comp{Name: "w", Parallelism: 5},
			// 10% of 5 GiB = 0.5 GiB < 1 GiB fixed: 4 GiB usable.
			[][]int{{1, 2, 3, 4}, {5}}, []int64{5 * gib, 2 * gib}},
		{"default-capacity", nil, nil, comp{Name: "w", Parallelism: 20},
			// 10 cores and 10 GiB by default, 1 core / 1 GiB padding: 9 instances.
			[][]int{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {10, 11, 12, 13, 14, 15, 16, 17, 18}, {19, 20}}, []int64{10 * gib, 10 * gib, 3 * gib}},
		{"custom-percentage", spi.Config{"egret.packing.padding.percentage": "50", "egret.packing.padding.ram": "0"},
			map[string]string{topology.KeyContainerRAM: "8GiB"}, comp{Name: "w", Parallelism: 5},
			[][]int{{1, 2, 3, 4}, {5}}, []int64{8 * gib, 5 * gib}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := mustPack(t, tc.cfg, packingtest.NewTopology("pad", tc.settings, tc.comp))
			if g := tasksPerContainer(got); !reflect.DeepEqual(g, tc.want) {
				t.Fatalf("containers %v, want %v", g, tc.want)
			}
			for i, c := range got.Containers {
				if c.Required.RAM != tc.required[i] {
					t.Errorf("container %d requires %d bytes ram, want %d", c.ID, c.Required.RAM, tc.required[i])
				}
			}
		})
	}
}

func TestContainersSettingIgnored(t *testing.T) {
	topo := packingtest.NewTopology("hint", map[string]string{topology.KeyContainers: "3"}, comp{Name: "s", Parallelism: 3})
	if n := len(mustPack(t, nil, topo).Containers); n != 1 {
		t.Fatalf("%d containers, want 1", n)
	}
}

func TestDefaultCapacityError(t *testing.T) {
	p, _ := ffd.New(nil)
	_, err := p.Pack(packingtest.NewTopology("big", nil, comp{Name: "count", Parallelism: 1, Config: map[string]string{topology.KeyRAM: "12GiB"}}))
	if !errors.Is(err, spi.ErrCannotFit) || !strings.Contains(err.Error(), "10 × egret.packing.default.instance.ram as topology.container.max.ram is unset") {
		t.Fatalf("err = %v", err)
	}
}

func TestRepackFirstFit(t *testing.T) {
	topo := packingtest.NewTopology("scale", map[string]string{topology.KeyContainerRAM: "5GiB"}, comp{Name: "s", Parallelism: 5})
	p, _ := ffd.New(nil)
	cur, err := p.Pack(topo) // {1,2,3,4} {5}
	if err != nil {
		t.Fatal(err)
	}
	next := packingtest.WithParallelism(topo, map[string]int{"s": 9})
	got, err := p.Repack(next, cur, map[string]int{"s": 9}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g := tasksPerContainer(got); !reflect.DeepEqual(g, [][]int{{1, 2, 3, 4}, {5, 6, 7, 8}, {9}}) {
		t.Fatalf("containers %v", g)
	}
	// Scaling down empties the last container, which is dropped.
	down := packingtest.WithParallelism(topo, map[string]int{"s": 4})
	got, err = p.Repack(down, got, map[string]int{"s": 4}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g := tasksPerContainer(got); !reflect.DeepEqual(g, [][]int{{1, 2, 3, 4}}) {
		t.Fatalf("containers %v", g)
	}
}

func TestRepackMovesWhenResourcesGrow(t *testing.T) {
	topo := packingtest.NewTopology("grow", map[string]string{topology.KeyContainerRAM: "5GiB"}, comp{Name: "s", Parallelism: 4})
	p, _ := ffd.New(nil)
	cur, err := p.Pack(topo) // {1,2,3,4}
	if err != nil {
		t.Fatal(err)
	}
	bigger := topo.Clone()
	bigger.Components[0].Config[topology.KeyRAM] = "2GiB"
	got, err := p.Repack(bigger, cur, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g := tasksPerContainer(got); !reflect.DeepEqual(g, [][]int{{1, 2}, {3, 4}}) {
		t.Fatalf("containers %v", g)
	}
	if err := packingtest.CheckPlan(bigger, nil, got, false); err != nil {
		t.Fatal(err)
	}
}
