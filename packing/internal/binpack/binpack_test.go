package binpack

import (
	"reflect"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
)

func TestParseSettings(t *testing.T) {
	s, err := ParseSettings(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{Instance: DefaultInstance, Padding: DefaultPadding, PaddingPercentage: 10,
		Overhead: DefaultOverhead, OverheadPerInstance: DefaultOverheadPerInstance}
	if s != want {
		t.Fatalf("defaults %+v, want %+v", s, want)
	}
	s, err = ParseSettings(spi.Config{KeyDefaultRAM: "2GiB", KeyDefaultDisk: "3GiB", KeyPaddingCPU: "0", KeyPaddingDisk: "100MB", KeyPaddingPercentage: "12.5"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Instance.RAM != 2*GiB || s.Instance.Disk != 3*GiB || s.Padding.CPU != 0 || s.Padding.Disk != 100e6 || s.PaddingPercentage != 12.5 {
		t.Fatalf("parsed %+v", s)
	}
	// Every bad key is reported at once.
	_, err = ParseSettings(spi.Config{KeyDefaultCPU: "0", KeyDefaultRAM: "x", KeyPaddingRAM: "-1MiB", KeyPaddingPercentage: "NaN", KeyPaddingCPU: "Inf",
		KeyOverheadCPU: "-1", KeyOverheadRAM: "lots", KeyOverheadRAMPerInstance: "-1MiB"})
	for _, k := range []string{KeyDefaultCPU, KeyDefaultRAM, KeyPaddingRAM, KeyPaddingPercentage, KeyPaddingCPU, KeyOverheadCPU, KeyOverheadRAM, KeyOverheadRAMPerInstance} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("error %v does not name %s", err, k)
		}
	}
}

// TestDaemonOverhead: a container reserves the larger of its padding and
// the daemons' overhead, base + instances × per instance, in its required
// resources and in what fits (issue 19).
func TestDaemonOverhead(t *testing.T) {
	s, err := ParseSettings(spi.Config{KeyPaddingCPU: "0.25", KeyPaddingRAM: "100MiB", KeyPaddingPercentage: "0",
		KeyOverheadCPU: "0.5", KeyOverheadRAM: "144MiB", KeyOverheadRAMPerInstance: "16MiB"})
	if err != nil {
		t.Fatal(err)
	}
	tp := topo(map[string]string{topology.KeyContainerRAM: "1GiB"},
		topology.Component{Name: "a", Parallelism: 4, Config: map[string]string{topology.KeyRAM: "200MiB"}})
	sp, err := NewSpec(tp, s, LimitsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sp.PadFor(3), (plan.Resources{CPU: 0.5, RAM: 192 * MiB, Disk: GiB}); got != want {
		t.Fatalf("PadFor(3) = %+v, want %+v", got, want)
	}
	// 1 GiB holds four 200 MiB instances with their 208 MiB of
	// overhead (1008 MiB), not five (1000 + 224 MiB).
	if !sp.Fits(plan.Resources{RAM: 600 * MiB}, 4, plan.Resources{RAM: 200 * MiB}) {
		t.Error("four instances and 208 MiB of overhead do not fit 1 GiB")
	}
	if sp.Fits(plan.Resources{RAM: 800 * MiB}, 5, plan.Resources{RAM: 200 * MiB}) {
		t.Error("five instances and 224 MiB of overhead fit 1 GiB")
	}
	b := &Bin{ID: 1}
	for i := range 4 {
		b.Add(plan.Instance{Component: "a", TaskID: i + 1, Resources: plan.Resources{CPU: 1, RAM: 200 * MiB}})
	}
	p := sp.Plan("t-1", []*Bin{b})
	if got, want := p.Containers[0].Required, (plan.Resources{CPU: 4.5, RAM: 800*MiB + 208*MiB, Disk: GiB}); got != want {
		t.Fatalf("required = %+v, want %+v", got, want)
	}
	// With the overhead off the padding alone applies.
	s.Overhead, s.OverheadPerInstance = plan.Resources{}, plan.Resources{}
	sp, _ = NewSpec(tp, s, LimitsOnly)
	if got := sp.PadFor(4); got != s.Padding {
		t.Fatalf("PadFor without overhead = %+v, want the padding %+v", got, s.Padding)
	}
}

func topo(cfg map[string]string, comps ...topology.Component) *topology.Topology {
	t := &topology.Topology{Name: "t", ID: "t-1", Config: cfg}
	if t.Config == nil {
		t.Config = map[string]string{}
	}
	t.Components = comps
	return t
}

func TestSpecPadding(t *testing.T) {
	s, _ := ParseSettings(nil)
	tp := topo(map[string]string{topology.KeyContainerRAM: "20GiB", topology.KeyContainerCPU: "4"},
		topology.Component{Name: "a", Parallelism: 1})
	rr, err := NewSpec(tp, s, LimitsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Pad != DefaultPadding || rr.Bounded != [3]bool{true, true, false} {
		t.Fatalf("roundrobin spec: pad %+v bounded %v", rr.Pad, rr.Bounded)
	}
	ffd, err := NewSpec(tp, s, DefaultCapacity)
	if err != nil {
		t.Fatal(err)
	}
	// cpu: max(1, 10% of 4) = 1; ram: max(1 GiB, 10% of 20 GiB) = 2 GiB;
	// disk: default capacity 10 GiB, max(1 GiB, 1 GiB).
	if want := (plan.Resources{CPU: 1, RAM: 2 * GiB, Disk: GiB}); ffd.Pad != want {
		t.Fatalf("ffd padding %+v, want %+v", ffd.Pad, want)
	}
	if want := (plan.Resources{CPU: 4, RAM: 20 * GiB, Disk: 10 * GiB}); ffd.Cap != want || ffd.FromLimit != [3]bool{true, true, false} {
		t.Fatalf("ffd capacity %+v from limit %v", ffd.Cap, ffd.FromLimit)
	}
}

func TestSpecRejectsNonFiniteCPU(t *testing.T) {
	s, _ := ParseSettings(nil)
	for _, v := range []string{"NaN", "Inf", "-Inf"} {
		tp := topo(map[string]string{topology.KeyContainerCPU: v}, topology.Component{Name: "a", Parallelism: 1, Config: map[string]string{topology.KeyCPU: v}})
		_, err := NewSpec(tp, s, LimitsOnly)
		if err == nil || !strings.Contains(err.Error(), topology.KeyCPU) || !strings.Contains(err.Error(), topology.KeyContainerCPU) {
			t.Errorf("%s: err = %v", v, err)
		}
	}
}

func TestSpecOrder(t *testing.T) {
	s, _ := ParseSettings(nil)
	tp := topo(nil,
		topology.Component{Name: "a", Parallelism: 1},
		topology.Component{Name: "b", Parallelism: 1, Config: map[string]string{topology.KeyRAM: "2GiB"}},
		topology.Component{Name: "c", Parallelism: 1, Config: map[string]string{topology.KeyCPU: "2"}},
		topology.Component{Name: "d", Parallelism: 1})
	sp, err := NewSpec(tp, s, LimitsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sp.Order, ","); got != "b,c,a,d" {
		t.Fatalf("order %s", got)
	}
}

func TestRepackCurrentPlanChecks(t *testing.T) {
	s, _ := ParseSettings(nil)
	tp := topo(nil, topology.Component{Name: "a", Parallelism: 2}, topology.Component{Name: "b", Parallelism: 1})
	sp, err := NewSpec(tp, s, LimitsOnly)
	if err != nil {
		t.Fatal(err)
	}
	strat := Strategy{Place: PlaceLeastLoaded}
	in := func(c string, id, idx int) plan.Instance { return plan.Instance{Component: c, TaskID: id, Index: idx} }
	for name, tc := range map[string]struct {
		cur  *plan.PackingPlan
		want string
	}{
		"duplicate-index": {&plan.PackingPlan{Containers: []plan.Container{{ID: 1, Instances: []plan.Instance{in("a", 1, 0), in("a", 2, 0)}}}}, "no task with index 1"},
		"duplicate-task":  {&plan.PackingPlan{Containers: []plan.Container{{ID: 1, Instances: []plan.Instance{in("a", 1, 0), in("a", 1, 1)}}}}, "task id 1"},
		"unknown-comp":    {&plan.PackingPlan{Containers: []plan.Container{{ID: 1, Instances: []plan.Instance{in("zz", 1, 0)}}}}, `"zz"`},
		"duplicate-cont":  {&plan.PackingPlan{Containers: []plan.Container{{ID: 1}, {ID: 1}}}, "container id 1"},
		"no-containers":   {&plan.PackingPlan{}, "no containers"},
	} {
		if _, err := Repack(sp, strat, tp, tc.cur, nil, 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %s", name, err, tc.want)
		}
	}
	// A component missing from the current plan gets all new tasks.
	cur := &plan.PackingPlan{TopologyID: "t-1", Containers: []plan.Container{{ID: 1, Instances: []plan.Instance{in("a", 1, 0), in("a", 2, 1)}}}}
	got, err := Repack(sp, strat, tp, cur, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l := got.Layout(); l.ComponentOf[3] != "b" || l.IndexOf[3] != 0 {
		t.Fatalf("new component: %+v", l)
	}
}

func TestRebalanceUnevenPlan(t *testing.T) {
	// An ffd plan {1..7} {8}: growing to 3 containers gives shares 3,3,2
	// (ties to the fuller container); container 1 gives up its newest
	// tasks 4..7.
	s, _ := ParseSettings(nil)
	tp := topo(nil, topology.Component{Name: "a", Parallelism: 8})
	sp, err := NewSpec(tp, s, DefaultCapacity)
	if err != nil {
		t.Fatal(err)
	}
	cur := &plan.PackingPlan{Containers: []plan.Container{{ID: 1}, {ID: 2}}}
	for i := 0; i < 8; i++ {
		c := 0
		if i == 7 {
			c = 1
		}
		cur.Containers[c].Instances = append(cur.Containers[c].Instances, plan.Instance{Component: "a", TaskID: i + 1, Index: i})
	}
	got, err := Repack(sp, Strategy{Place: PlaceFirstFit, CheckFit: true}, tp, cur, nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Tasks 4..7 are dealt round robin to containers 2 and 3.
	want := map[int]int{1: 1, 2: 1, 3: 1, 8: 2, 4: 2, 6: 2, 5: 3, 7: 3}
	if l := got.Layout(); !reflect.DeepEqual(l.ContainerOf, want) {
		t.Fatalf("layout %v, want %v", l.ContainerOf, want)
	}
}
