package packingtest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/spi/spitest"
	"github.com/egret-stream/egret/core/topology"
)

// Factory builds the packing algorithm under test from its config.
type Factory = func(cfg spi.Config) (spi.Packing, error)

// Comp describes one component of a test topology: the first component of
// a topology is a spout, the others bolts.
type Comp struct {
	Name        string
	Parallelism int
	Config      map[string]string
}

// NewTopology builds a topology for packing tests; only names, parallelism
// and settings matter to packing, so it has no streams.
func NewTopology(name string, config map[string]string, comps ...Comp) *topology.Topology {
	t := &topology.Topology{Name: name, ID: name + "-0001", Config: map[string]string{}}
	for k, v := range config {
		t.Config[k] = v
	}
	for i, c := range comps {
		kind := topology.Bolt
		if i == 0 {
			kind = topology.Spout
		}
		cc := topology.Component{Name: c.Name, Kind: kind, Parallelism: c.Parallelism, Config: map[string]string{}}
		for k, v := range c.Config {
			cc.Config[k] = v
		}
		t.Components = append(t.Components, cc)
	}
	return t
}

// WithParallelism returns a copy of t with the given components' task
// counts changed.
func WithParallelism(t *topology.Topology, parallelism map[string]int) *topology.Topology {
	out := t.Clone()
	for i := range out.Components {
		if n, ok := parallelism[out.Components[i].Name]; ok {
			out.Components[i].Parallelism = n
		}
	}
	return out
}

type packCase struct {
	name string
	cfg  spi.Config
	topo *topology.Topology
}

func packCases() []packCase {
	wide := make([]Comp, 50)
	for i := range wide {
		wide[i] = Comp{Name: fmt.Sprintf("c%02d", i), Parallelism: 8}
		if i%5 == 0 {
			wide[i].Config = map[string]string{topology.KeyRAM: "512MiB", topology.KeyCPU: "0.5"}
		}
	}
	return []packCase{
		{"single-task", nil, NewTopology("single", nil, Comp{Name: "spout", Parallelism: 1})},
		{"two-containers", nil, NewTopology("rr", map[string]string{topology.KeyContainers: "2"},
			Comp{Name: "spout", Parallelism: 2}, Comp{Name: "bolt", Parallelism: 3})},
		{"component-overrides", nil, NewTopology("overrides",
			map[string]string{topology.KeyContainers: "2", topology.KeyRAM: "2GiB"},
			Comp{Name: "spout", Parallelism: 2},
			Comp{Name: "small", Parallelism: 3, Config: map[string]string{topology.KeyRAM: "512MiB", topology.KeyCPU: "0.5", topology.KeyDisk: "3GiB"}},
			Comp{Name: "big", Parallelism: 1, Config: map[string]string{topology.KeyCPU: "2"}})},
		{"container-limits", nil, NewTopology("limits",
			map[string]string{topology.KeyContainers: "4", topology.KeyContainerCPU: "4", topology.KeyContainerRAM: "6GiB", topology.KeyContainerDisk: "8GiB"},
			Comp{Name: "a", Parallelism: 4, Config: map[string]string{topology.KeyRAM: "2GiB"}},
			Comp{Name: "b", Parallelism: 6, Config: map[string]string{topology.KeyRAM: "1GiB", topology.KeyCPU: "0.5"}})},
		{"custom-config", spi.Config{
			"egret.packing.default.instance.cpu": "0.5", "egret.packing.default.instance.ram": "256MiB",
			"egret.packing.default.instance.disk": "128MiB", "egret.packing.padding.cpu": "0.25",
			"egret.packing.padding.ram": "128MiB", "egret.packing.padding.disk": "64MiB", "egret.packing.padding.percentage": "0",
		}, NewTopology("custom", map[string]string{topology.KeyContainers: "3"},
			Comp{Name: "spout", Parallelism: 3}, Comp{Name: "bolt", Parallelism: 6})},
		{"wide-50x8", nil, NewTopology("wide", map[string]string{topology.KeyContainers: "20"}, wide...)},
	}
}

// Run checks an algorithm's Pack against the packing contract.
func Run(t spitest.T, newPacking Factory) {
	t.Helper()
	for _, tc := range packCases() {
		spitest.Run(t, "pack/"+tc.name, func(t spitest.T) {
			orig := tc.topo.Clone()
			p := build(t, newPacking, tc.cfg)
			start := time.Now()
			got, err := p.Pack(tc.topo)
			if err != nil {
				t.Fatalf("Pack: %v", err)
			}
			t.Logf("%d tasks into %d containers in %v", len(plan.TaskIDs(tc.topo)), len(got.Containers), time.Since(start))
			if err := CheckPlan(tc.topo, tc.cfg, got, true); err != nil {
				t.Fatalf("invalid plan: %v", err)
			}
			if !reflect.DeepEqual(tc.topo, orig) {
				t.Fatalf("Pack changed its topology")
			}
			// Deterministic: the same algorithm again, and a new instance.
			again, err := p.Pack(tc.topo)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("second Pack differs (err %v):\n%v\nvs\n%v", err, again, got)
			}
			again, err = build(t, newPacking, tc.cfg).Pack(tc.topo.Clone())
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("Pack by a new instance differs (err %v)", err)
			}
		})
	}
	runCannotFit(t, newPacking)
	runInvalid(t, newPacking)
}

func build(t spitest.T, newPacking Factory, cfg spi.Config) spi.Packing {
	t.Helper()
	p, err := newPacking(cfg)
	if err != nil {
		t.Fatalf("factory: %v", err)
	}
	if p == nil {
		t.Fatalf("factory returned nil without an error")
	}
	return p
}

func runCannotFit(t spitest.T, newPacking Factory) {
	cases := []struct {
		name, key, limit, need, resource string
	}{
		{"ram", topology.KeyRAM, "2GiB", "4GiB", "ram"},
		{"cpu", topology.KeyCPU, "2", "3", "cpu"},
		{"disk", topology.KeyDisk, "4GiB", "8GiB", "disk"},
	}
	limitKey := map[string]string{topology.KeyRAM: topology.KeyContainerRAM, topology.KeyCPU: topology.KeyContainerCPU, topology.KeyDisk: topology.KeyContainerDisk}
	for _, tc := range cases {
		spitest.Run(t, "cannot-fit/"+tc.name, func(t spitest.T) {
			topo := NewTopology("big", map[string]string{limitKey[tc.key]: tc.limit},
				Comp{Name: "spout", Parallelism: 1}, Comp{Name: "hugebolt", Parallelism: 2, Config: map[string]string{tc.key: tc.need}})
			_, err := build(t, newPacking, nil).Pack(topo)
			if !errors.Is(err, spi.ErrCannotFit) {
				t.Fatalf("Pack: err = %v, want one wrapping spi.ErrCannotFit", err)
			}
			if msg := err.Error(); !strings.Contains(msg, "hugebolt") || !strings.Contains(msg, tc.resource) {
				t.Fatalf("error %q does not name the component hugebolt and the resource %s", msg, tc.resource)
			}
		})
	}
	spitest.Run(t, "cannot-fit/padding", func(t spitest.T) {
		topo := NewTopology("pad", map[string]string{topology.KeyContainerRAM: "512MiB"}, Comp{Name: "spout", Parallelism: 1, Config: map[string]string{topology.KeyRAM: "256MiB"}})
		if _, err := build(t, newPacking, nil).Pack(topo); !errors.Is(err, spi.ErrCannotFit) {
			t.Fatalf("container smaller than the 1GiB default padding: err = %v, want spi.ErrCannotFit", err)
		}
	})
}

func runInvalid(t spitest.T, newPacking Factory) {
	base := func() *topology.Topology {
		return NewTopology("bad", nil, Comp{Name: "spout", Parallelism: 1}, Comp{Name: "bolt", Parallelism: 2})
	}
	for _, tc := range []struct{ key, value string }{
		{"egret.packing.default.instance.cpu", "-1"},
		{"egret.packing.default.instance.cpu", "lots"},
		{"egret.packing.default.instance.ram", "lots"},
		{"egret.packing.default.instance.ram", "-1GiB"},
		{"egret.packing.default.instance.disk", "0"},
		{"egret.packing.padding.percentage", "150"},
		{"egret.packing.padding.percentage", "ten"},
		{"egret.packing.padding.cpu", "-0.5"},
		{"egret.packing.padding.ram", "1 parsec"},
		{"egret.packing.padding.disk", "-1"},
	} {
		spitest.Run(t, "invalid-config/"+tc.key+"="+tc.value, func(t spitest.T) {
			cfg := spi.Config{tc.key: tc.value}
			p, err := newPacking(cfg)
			if err == nil {
				_, err = p.Pack(base())
			}
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("err = %v, want an error naming %s", err, tc.key)
			}
		})
	}
	for _, tc := range []struct {
		name      string
		topo      func() *topology.Topology
		mentioned []string
	}{
		{"component-ram", func() *topology.Topology {
			t := base()
			t.Components[1].Config[topology.KeyRAM] = "lots"
			return t
		}, []string{"bolt", topology.KeyRAM}},
		{"component-cpu-negative", func() *topology.Topology {
			t := base()
			t.Components[1].Config[topology.KeyCPU] = "-2"
			return t
		}, []string{"bolt", topology.KeyCPU}},
		{"container-limit", func() *topology.Topology {
			t := base()
			t.Config[topology.KeyContainerRAM] = "abc"
			return t
		}, []string{topology.KeyContainerRAM}},
		{"zero-parallelism", func() *topology.Topology {
			t := base()
			t.Components[1].Parallelism = 0
			return t
		}, []string{"bolt"}},
		{"no-components", func() *topology.Topology { return NewTopology("empty", nil) }, nil},
		{"nil-topology", func() *topology.Topology { return nil }, nil},
	} {
		spitest.Run(t, "invalid-topology/"+tc.name, func(t spitest.T) {
			_, err := build(t, newPacking, nil).Pack(tc.topo())
			if err == nil {
				t.Fatalf("Pack accepted an invalid topology")
			}
			for _, m := range tc.mentioned {
				if !strings.Contains(err.Error(), m) {
					t.Fatalf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}
