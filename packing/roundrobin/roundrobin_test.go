package roundrobin_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/packing/packingtest"
	"github.com/egret-stream/egret/packing/roundrobin"
)

const gib = int64(1) << 30

func inst(comp string, task, index int, r plan.Resources) plan.Instance {
	return plan.Instance{Component: comp, TaskID: task, Index: index, Resources: r}
}

var unit = plan.Resources{CPU: 1, RAM: gib, Disk: gib}

func res(cpu float64, ram, disk int64) plan.Resources {
	return plan.Resources{CPU: cpu, RAM: ram, Disk: disk}
}

func golden() *topology.Topology {
	return packingtest.NewTopology("golden", map[string]string{topology.KeyContainers: "2"},
		packingtest.Comp{Name: "spout", Parallelism: 2}, packingtest.Comp{Name: "bolt", Parallelism: 3})
}

func mustNew(t *testing.T, cfg spi.Config) *roundrobin.Packing {
	t.Helper()
	p, err := roundrobin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGoldenPlacement(t *testing.T) {
	got, err := mustNew(t, nil).Pack(golden())
	if err != nil {
		t.Fatal(err)
	}
	want := &plan.PackingPlan{TopologyID: "golden-0001", Containers: []plan.Container{
		{ID: 1, Instances: []plan.Instance{inst("spout", 1, 0, unit), inst("bolt", 3, 0, unit), inst("bolt", 5, 2, unit)},
			Required: res(4, 4*gib, 4*gib)},
		{ID: 2, Instances: []plan.Instance{inst("spout", 2, 1, unit), inst("bolt", 4, 1, unit)},
			Required: res(3, 3*gib, 3*gib)},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestLargestRAMDealtFirst(t *testing.T) {
	topo := packingtest.NewTopology("order", map[string]string{topology.KeyContainers: "2"},
		packingtest.Comp{Name: "spout", Parallelism: 1},
		packingtest.Comp{Name: "big", Parallelism: 1, Config: map[string]string{topology.KeyRAM: "2GiB"}},
		packingtest.Comp{Name: "bolt", Parallelism: 2})
	got, err := mustNew(t, nil).Pack(topo)
	if err != nil {
		t.Fatal(err)
	}
	// Deal order: big(task 2), spout(1), bolt(3), bolt(4).
	l := got.Layout()
	want := map[int]int{2: 1, 1: 2, 3: 1, 4: 2}
	if !reflect.DeepEqual(l.ContainerOf, want) {
		t.Fatalf("containers %v, want %v", l.ContainerOf, want)
	}
}

func TestPaddingIsFixed(t *testing.T) {
	cfg := spi.Config{"egret.packing.padding.ram": "512MiB", "egret.packing.padding.cpu": "0.5",
		"egret.packing.padding.disk": "0", "egret.packing.padding.percentage": "90"}
	got, err := mustNew(t, cfg).Pack(golden())
	if err != nil {
		t.Fatal(err)
	}
	// Heron's round robin: sum of the instances plus the fixed padding;
	// the percentage is for ffd and rcrr only.
	if r := got.Containers[0].Required; r != res(3.5, 3*gib+gib/2, 3*gib) {
		t.Fatalf("container 1 requires %+v", r)
	}
}

func TestInstanceLargerThanContainer(t *testing.T) {
	topo := packingtest.NewTopology("wc", map[string]string{topology.KeyContainerRAM: "3GiB"},
		packingtest.Comp{Name: "spout", Parallelism: 1},
		packingtest.Comp{Name: "count", Parallelism: 2, Config: map[string]string{topology.KeyRAM: "4GiB"}})
	_, err := mustNew(t, nil).Pack(topo)
	if !errors.Is(err, spi.ErrCannotFit) {
		t.Fatalf("err = %v", err)
	}
	want := `roundrobin: topology does not fit: component "count" needs 4 GiB ram per instance but a container holds at most 2 GiB ` +
		`(topology.container.max.ram is 3 GiB, minus 1 GiB padding); lower topology.component.ram for count or raise topology.container.max.ram`
	if err.Error() != want {
		t.Fatalf("error\n%s\nwant\n%s", err, want)
	}
}

func TestContainerOverLimit(t *testing.T) {
	topo := golden()
	topo.Config[topology.KeyContainers] = "1"
	topo.Config[topology.KeyContainerCPU] = "5"
	_, err := mustNew(t, nil).Pack(topo)
	if !errors.Is(err, spi.ErrCannotFit) {
		t.Fatalf("err = %v", err)
	}
	for _, s := range []string{"container 1 needs 6 cpu", "topology.container.max.cpu is 5;", `"bolt"`, "topology.containers"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}

func TestMoreContainersThanTasks(t *testing.T) {
	topo := golden()
	topo.Config[topology.KeyContainers] = "6"
	_, err := mustNew(t, nil).Pack(topo)
	if err == nil || !strings.Contains(err.Error(), "topology.containers is 6 but the topology has only 5 tasks") {
		t.Fatalf("err = %v", err)
	}
	topo.Config[topology.KeyContainers] = "two"
	if _, err := mustNew(t, nil).Pack(topo); err == nil || !strings.Contains(err.Error(), topology.KeyContainers) {
		t.Fatalf("err = %v", err)
	}
}

func TestRepackGolden(t *testing.T) {
	p := mustNew(t, nil)
	cur, err := p.Pack(golden())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		parallelism map[string]int
		containers  int
		want        map[int]int // task -> container
	}{
		// New bolt tasks 6 and 7 go to the least loaded container.
		{"scale-up", map[string]int{"bolt": 5}, 0, map[int]int{1: 1, 3: 1, 5: 1, 7: 1, 2: 2, 4: 2, 6: 2}},
		// bolt[2] (task 5) and bolt[1] (task 4) go.
		{"scale-down", map[string]int{"bolt": 1}, 0, map[int]int{1: 1, 3: 1, 2: 2}},
		// Shares 2,2,1: container 1 gives up its newest task, 5.
		{"three-containers", nil, 3, map[int]int{1: 1, 3: 1, 2: 2, 4: 2, 5: 3}},
		{"one-container", nil, 1, map[int]int{1: 1, 2: 1, 3: 1, 4: 1, 5: 1}},
		// 7 tasks over 3: shares 3,2,2; container 1 keeps 1,3,5; new 6 and 7 and nothing else move.
		{"scale-and-grow", map[string]int{"bolt": 5}, 3, map[int]int{1: 1, 3: 1, 5: 1, 2: 2, 4: 2, 6: 3, 7: 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := packingtest.WithParallelism(golden(), tc.parallelism)
			got, err := p.Repack(next, cur, tc.parallelism, tc.containers)
			if err != nil {
				t.Fatal(err)
			}
			if l := got.Layout(); !reflect.DeepEqual(l.ContainerOf, tc.want) {
				t.Fatalf("task containers %v, want %v", l.ContainerOf, tc.want)
			}
		})
	}
}

func TestRepackOverLimitFails(t *testing.T) {
	topo := golden()
	topo.Config[topology.KeyContainerRAM] = "4GiB"
	p := mustNew(t, nil)
	cur, err := p.Pack(topo)
	if err != nil {
		t.Fatal(err)
	}
	next := packingtest.WithParallelism(topo, map[string]int{"bolt": 5})
	if _, err := p.Repack(next, cur, map[string]int{"bolt": 5}, 0); !errors.Is(err, spi.ErrCannotFit) {
		t.Fatalf("err = %v, want spi.ErrCannotFit (round robin never adds containers)", err)
	}
}

func TestRegistered(t *testing.T) {
	if _, err := spi.LookupPacking("roundrobin"); err != nil {
		t.Fatal(err)
	}
}
