package packing_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
)

type nopSpout struct{ api.BaseSpout }

func (nopSpout) NextTuple()                               {}
func (nopSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("x") }

type nopBolt struct{ api.BaseBolt }

func (nopBolt) Execute(api.Tuple)                      {}
func (nopBolt) DeclareOutputFields(api.OutputDeclarer) {}

// TestSetResourcesReachThePlan (issue 19): what a topology asks for with
// SetResources is what every packing gives each of its tasks, and a
// request no container can hold fails with an error naming the
// component.
func TestSetResourcesReachThePlan(t *testing.T) {
	build := func(countRAM int64, containerRAM string) *topology.Topology {
		b := api.NewTopologyBuilder("res")
		b.SetSpout("words", func() api.Spout { return nopSpout{} }, 2).SetResources(0.5, 256<<20, 64<<20)
		b.SetBolt("count", func() api.Bolt { return nopBolt{} }, 3).ShuffleGrouping("words").SetResources(1.5, countRAM, 128<<20)
		if containerRAM != "" {
			b.SetConfig(topology.KeyContainerRAM, containerRAM)
		}
		top, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return top.Logical
	}
	want := map[string][3]float64{"words": {0.5, 256 << 20, 64 << 20}, "count": {1.5, 512 << 20, 128 << 20}}
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
			plan, err := p.Pack(build(512<<20, ""))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range plan.Containers {
				for _, in := range c.Instances {
					r := in.Resources
					if w := want[in.Component]; r.CPU != w[0] || float64(r.RAM) != w[1] || float64(r.Disk) != w[2] {
						t.Errorf("task %d (%s) got %+v, want %v", in.TaskID, in.Component, r, w)
					}
				}
			}
			_, err = p.Pack(build(4<<30, "3GiB"))
			if !errors.Is(err, spi.ErrCannotFit) || !strings.Contains(err.Error(), `component "count"`) {
				t.Fatalf("a 4GiB instance in 3GiB containers: err = %v, want ErrCannotFit naming component \"count\"", err)
			}
		})
	}
}
