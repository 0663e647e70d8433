package packing_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/packing/packingtest"

	_ "github.com/egret-stream/egret/packing/ffd"
	_ "github.com/egret-stream/egret/packing/rcrr"
	_ "github.com/egret-stream/egret/packing/roundrobin"
)

// TestRandomScenarios packs random topologies and repacks them through
// random changes: every call either fails cleanly or returns a plan that
// passes packingtest.CheckPlan and keeps the surviving tasks' ids.
func TestRandomScenarios(t *testing.T) {
	rams := []string{"", "256MiB", "1GiB", "2GiB", "3GiB"}
	cpus := []string{"", "0.5", "1", "2"}
	limits := []string{"", "", "4GiB", "8GiB"}
	for _, name := range spi.PackingNames() {
		t.Run(name, func(t *testing.T) {
			f, err := spi.LookupPacking(name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := f(nil)
			if err != nil {
				t.Fatal(err)
			}
			rp := p.(spi.Repacking)
			rng := rand.New(rand.NewPCG(1, 2))
			repacked := 0
			defer func() {
				if repacked < 100 {
					t.Errorf("only %d successful repacks; the scenarios are too hard", repacked)
				}
			}()
			for iter := range 200 {
				var comps []packingtest.Comp
				for i := range 1 + rng.IntN(5) {
					comps = append(comps, packingtest.Comp{Name: fmt.Sprintf("c%d", i), Parallelism: 1 + rng.IntN(6),
						Config: map[string]string{topology.KeyRAM: rams[rng.IntN(len(rams))], topology.KeyCPU: cpus[rng.IntN(len(cpus))]}})
				}
				cfg := map[string]string{topology.KeyContainers: fmt.Sprint(1 + rng.IntN(3)), topology.KeyContainerRAM: limits[rng.IntN(len(limits))]}
				topo := packingtest.NewTopology("rnd", cfg, comps...)
				cur, err := p.Pack(topo)
				if err != nil {
					continue // a cannot-fit or too-many-containers case
				}
				if err := packingtest.CheckPlan(topo, nil, cur, true); err != nil {
					t.Fatalf("iter %d: Pack: %v", iter, err)
				}
				for step := range 4 {
					change := map[string]int{}
					for _, c := range topo.Components {
						if rng.IntN(2) == 0 {
							change[c.Name] = 1 + rng.IntN(8)
						}
					}
					next := packingtest.WithParallelism(topo, change)
					containers := 0
					if rng.IntN(3) == 0 {
						containers = 1 + rng.IntN(4)
					}
					got, err := rp.Repack(next, cur, change, containers)
					tasks := 0
					for _, c := range next.Components {
						tasks += c.Parallelism
					}
					if err != nil {
						if !errors.Is(err, spi.ErrCannotFit) && containers <= tasks {
							t.Fatalf("iter %d step %d: Repack(%v, %d): unexpected error %v", iter, step, change, containers, err)
						}
						continue
					}
					repacked++
					if err := packingtest.CheckPlan(next, nil, got, false); err != nil {
						t.Fatalf("iter %d step %d: Repack(%v, %d): %v", iter, step, change, containers, err)
					}
					old, nw := cur.Layout(), got.Layout()
					for id, comp := range old.ComponentOf {
						c, _ := next.Component(comp)
						if _, ok := nw.ComponentOf[id]; ok != (old.IndexOf[id] < c.Parallelism) {
							t.Fatalf("iter %d step %d: task %d kept=%v", iter, step, id, ok)
						}
					}
					topo, cur = next, got
				}
			}
		})
	}
}
