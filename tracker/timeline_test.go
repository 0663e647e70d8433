package tracker

import (
	"math"
	"testing"
	"time"
)

func statsOf(id string, tasks map[string]map[string]float64, comp map[string]string) *tmStats {
	st := &tmStats{TopologyID: id}
	st.Components = map[string]struct {
		Tasks map[string]tmTaskStats `json:"tasks"`
		Sums  map[string]float64     `json:"sums"`
	}{}
	for task, m := range tasks {
		c := st.Components[comp[task]]
		if c.Tasks == nil {
			c.Tasks = map[string]tmTaskStats{}
		}
		c.Tasks[task] = tmTaskStats{Container: 1, Metrics: m}
		st.Components[comp[task]] = c
	}
	return st
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestTimelineRatesLatenciesRestarts: rates per task and summed per
// component, latencies weighted by counts, a running total that goes down
// (a restarted process) counted from 0 and as one restart, and the rings
// bounded.
func TestTimelineRatesLatenciesRestarts(t *testing.T) {
	o := &Options{SampleInterval: time.Second, FineWindow: 3 * time.Second, CoarseWindow: 2 * time.Minute, MaxTasks: 10}
	tt := &topoTrack{id: "x-1", procs: map[int]*procTrack{}}
	comp := map[string]string{"1": "spout", "2": "bolt", "3": "bolt"}
	t0 := time.Unix(1000, 0)
	tt.record(statsOf("x-1", map[string]map[string]float64{
		"1": {"instance.emitted": 100, "process.pid": 10, "process.start.unix": 5},
		"2": {"instance.executed": 50, "instance.execute.nanos": 50e6, "process.pid": 20, "process.start.unix": 5},
		"3": {"instance.executed": 50, "instance.execute.nanos": 50e6, "process.pid": 30, "process.start.unix": 5},
	}, comp), t0, o)
	if len(tt.fine) != 0 {
		t.Fatalf("a first poll gives no sample: %d", len(tt.fine))
	}
	// 2s later: spout +200 (100/s); task 2 +100 executed in 300ms total
	// (3ms each); task 3 restarted (pid 31) and counted 20 in 20ms.
	tt.record(statsOf("x-1", map[string]map[string]float64{
		"1": {"instance.emitted": 300, "process.pid": 10, "process.start.unix": 5},
		"2": {"instance.executed": 150, "instance.execute.nanos": 350e6, "process.pid": 20, "process.start.unix": 5},
		"3": {"instance.executed": 20, "instance.execute.nanos": 20e6, "process.pid": 31, "process.start.unix": 7},
	}, comp), t0.Add(2*time.Second), o)
	if len(tt.fine) != 1 {
		t.Fatalf("%d fine samples, want 1", len(tt.fine))
	}
	s := tt.fine[0]
	if v := s.comps["spout"][0]; !near(v, 100) {
		t.Errorf("spout emit rate %v, want 100", v)
	}
	if v := s.comps["bolt"][1]; !near(v, 60) { // (100 + 20) / 2s
		t.Errorf("bolt execute rate %v, want 60", v)
	}
	if v := s.comps["bolt"][7]; !near(v, 320.0/120) { // (300ms + 20ms) / 120 tuples
		t.Errorf("bolt execute latency %v ms, want %v", v, 320.0/120)
	}
	if v := s.tasks[2][7]; !near(v, 3) {
		t.Errorf("task 2 execute latency %v ms, want 3", v)
	}
	if !math.IsNaN(s.comps["spout"][2]) {
		t.Errorf("ack rate without acking metrics: %v, want unknown", s.comps["spout"][2])
	}
	if p := tt.procs[3]; p.restarts != 1 || p.pid != 31 {
		t.Errorf("task 3: %+v, want 1 restart and pid 31", p)
	}
	if p := tt.procs[2]; p.restarts != 0 {
		t.Errorf("task 2: %+v, want no restart", p)
	}
	for i := 2; i < 200; i++ {
		tt.record(statsOf("x-1", map[string]map[string]float64{"1": {"instance.emitted": float64(100 * i)}}, comp), t0.Add(time.Duration(i)*time.Second), o)
	}
	if len(tt.fine) != o.fineLen() || len(tt.coarse) != o.coarseLen() {
		t.Errorf("rings hold %d fine and %d coarse samples, bounds %d and %d", len(tt.fine), len(tt.coarse), o.fineLen(), o.coarseLen())
	}
	last := tt.fine[len(tt.fine)-1]
	if !last.at.Equal(t0.Add(199 * time.Second)) {
		t.Errorf("newest fine sample at %v", last.at)
	}
	if v := tt.coarse[len(tt.coarse)-1].comps["spout"][0]; !near(v, 100) {
		t.Errorf("coarse spout emit rate %v, want 100", v)
	}
}
