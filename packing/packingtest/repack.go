package packingtest

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/spi/spitest"
	"github.com/egret-stream/egret/core/topology"
)

// RunRepacking checks an algorithm's Repack against the repacking
// contract; the Packing newPacking returns must implement spi.Repacking.
func RunRepacking(t spitest.T, newPacking Factory) {
	t.Helper()
	base := NewTopology("scale", map[string]string{topology.KeyContainers: "2"},
		Comp{Name: "spout", Parallelism: 2}, Comp{Name: "bolt", Parallelism: 3})

	type step struct {
		parallelism map[string]int
		containers  int
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"scale-up", []step{{map[string]int{"bolt": 6}, 0}}},
		{"scale-down", []step{{map[string]int{"bolt": 1}, 0}}},
		{"scale-both-ways", []step{{map[string]int{"spout": 3, "bolt": 2}, 0}}},
		{"down-then-up", []step{{map[string]int{"bolt": 1}, 0}, {map[string]int{"bolt": 4}, 0}}},
		{"no-change", []step{{nil, 0}}},
		{"more-containers", []step{{nil, 3}}},
		{"fewer-containers", []step{{nil, 3}, {nil, 1}}},
		{"scale-and-containers", []step{{map[string]int{"bolt": 6}, 4}}},
	}
	for _, tc := range cases {
		spitest.Run(t, "repack/"+tc.name, func(t spitest.T) {
			p := build(t, newPacking, nil)
			rp := repacker(t, p)
			topo := base.Clone()
			cur, err := p.Pack(topo)
			if err != nil {
				t.Fatalf("Pack: %v", err)
			}
			for _, s := range tc.steps {
				next := WithParallelism(topo, s.parallelism)
				orig := next.Clone()
				got, err := rp.Repack(next, cur, s.parallelism, s.containers)
				if err != nil {
					t.Fatalf("Repack(%v, %d): %v", s.parallelism, s.containers, err)
				}
				if !reflect.DeepEqual(next, orig) {
					t.Fatalf("Repack changed its topology")
				}
				if err := CheckPlan(next, nil, got, false); err != nil {
					t.Fatalf("Repack(%v, %d): invalid plan: %v", s.parallelism, s.containers, err)
				}
				if err := checkRepack(cur, got, next, s.containers); err != nil {
					t.Fatalf("Repack(%v, %d): %v", s.parallelism, s.containers, err)
				}
				again, err := build(t, newPacking, nil).(spi.Repacking).Repack(next.Clone(), cur, s.parallelism, s.containers)
				if err != nil || !reflect.DeepEqual(again, got) {
					t.Fatalf("Repack is not deterministic (err %v)", err)
				}
				topo, cur = next, got
			}
		})
	}

	spitest.Run(t, "repack/limits", func(t spitest.T) {
		limited := NewTopology("limited", map[string]string{topology.KeyContainers: "2", topology.KeyContainerRAM: "4GiB"},
			Comp{Name: "spout", Parallelism: 2}, Comp{Name: "bolt", Parallelism: 3})
		p := build(t, newPacking, nil)
		cur, err := p.Pack(limited)
		if err != nil {
			t.Fatalf("Pack: %v", err)
		}
		next := WithParallelism(limited, map[string]int{"bolt": 8})
		got, err := repacker(t, p).Repack(next, cur, map[string]int{"bolt": 8}, 0)
		if err != nil {
			if !errors.Is(err, spi.ErrCannotFit) {
				t.Fatalf("Repack over the container limit: err = %v, want a plan within the limits or spi.ErrCannotFit", err)
			}
			return
		}
		if err := CheckPlan(next, nil, got, false); err != nil {
			t.Fatalf("invalid plan: %v", err)
		}
		if err := checkRepack(cur, got, next, 0); err != nil {
			t.Fatal(err)
		}
	})

	spitest.Run(t, "repack/invalid", func(t spitest.T) {
		p := build(t, newPacking, nil)
		rp := repacker(t, p)
		cur, err := p.Pack(base)
		if err != nil {
			t.Fatalf("Pack: %v", err)
		}
		bigger := WithParallelism(base, map[string]int{"bolt": 4})
		for name, call := range map[string]func() (*plan.PackingPlan, error){
			"stale-topology":     func() (*plan.PackingPlan, error) { return rp.Repack(base, cur, map[string]int{"bolt": 4}, 0) },
			"unknown-component":  func() (*plan.PackingPlan, error) { return rp.Repack(bigger, cur, map[string]int{"nosuch": 1}, 0) },
			"nil-current":        func() (*plan.PackingPlan, error) { return rp.Repack(bigger, nil, map[string]int{"bolt": 4}, 0) },
			"negative-container": func() (*plan.PackingPlan, error) { return rp.Repack(bigger, cur, nil, -1) },
			"too-many-container": func() (*plan.PackingPlan, error) { return rp.Repack(bigger, cur, nil, 7) },
			"nil-topology":       func() (*plan.PackingPlan, error) { return rp.Repack(nil, cur, nil, 0) },
		} {
			if got, err := call(); err == nil {
				t.Errorf("%s: Repack accepted it and returned %v", name, got)
			}
		}
	})
}

func repacker(t spitest.T, p spi.Packing) spi.Repacking {
	t.Helper()
	rp, ok := p.(spi.Repacking)
	if !ok {
		t.Fatalf("%T does not implement spi.Repacking", p)
	}
	return rp
}

// checkRepack verifies the repacking contract between cur and got for the
// new topology next.
func checkRepack(cur, got *plan.PackingPlan, next *topology.Topology, containers int) error {
	old, nw := cur.Layout(), got.Layout()
	maxOld := 0
	for _, id := range old.AllTasks() {
		maxOld = max(maxOld, id)
	}
	for _, c := range next.Components {
		oldIDs := old.Tasks[c.Name]
		for _, id := range oldIDs {
			keep := old.IndexOf[id] < c.Parallelism
			_, present := nw.ComponentOf[id]
			switch {
			case keep && !present:
				return fmt.Errorf("task %d (%s[%d]) should stay but is gone", id, c.Name, old.IndexOf[id])
			case !keep && present:
				return fmt.Errorf("task %d (%s[%d]) should be removed: the highest indexes go first", id, c.Name, old.IndexOf[id])
			case keep && (nw.ComponentOf[id] != c.Name || nw.IndexOf[id] != old.IndexOf[id]):
				return fmt.Errorf("task %d changed from %s[%d] to %s[%d]", id, c.Name, old.IndexOf[id], nw.ComponentOf[id], nw.IndexOf[id])
			case keep && containers == 0 && len(got.Containers) >= len(cur.Containers) && nw.ContainerOf[id] != old.ContainerOf[id]:
				return fmt.Errorf("task %d moved from container %d to %d without a container count change", id, old.ContainerOf[id], nw.ContainerOf[id])
			}
		}
		for _, id := range nw.Tasks[c.Name] {
			if _, existed := old.ComponentOf[id]; !existed && id <= maxOld {
				return fmt.Errorf("new task %d of %s reuses an id not above the current plan's highest id %d", id, c.Name, maxOld)
			}
		}
	}
	if containers > 0 && len(got.Containers) != containers && !limited(next) {
		return fmt.Errorf("plan has %d containers, asked for %d", len(got.Containers), containers)
	}
	return nil
}

func limited(t *topology.Topology) bool {
	return t.Config[topology.KeyContainerCPU] != "" || t.Config[topology.KeyContainerRAM] != "" || t.Config[topology.KeyContainerDisk] != ""
}
