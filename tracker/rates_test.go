package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/statemgr/memory"
)

type memBackends struct{ store *memory.Store }

func (b memBackends) StateManager(context.Context, spi.Config) (spi.StateManager, error) {
	return b.store.NewSession(), nil
}
func (memBackends) Uploader(context.Context, spi.Config) (spi.Uploader, error) {
	return nil, errors.New("no uploader in this test")
}
func (memBackends) Packing(context.Context, spi.Config) (spi.Packing, error) {
	return nil, errors.New("no packing in this test")
}
func (memBackends) Scheduler(context.Context, spi.Config) (spi.Scheduler, error) {
	return nil, errors.New("no scheduler in this test")
}

// exactSource is a topology manager whose instances report exact
// running totals every interval (with a phase and a jitter of their
// own), read at the time of a fake clock.
type exactSource struct {
	mu       sync.Mutex
	now      time.Time
	t0       time.Time
	interval time.Duration
}

// perTask are the exact per-second rates and the levels of the fake
// tasks: task 1 is the spout, tasks 2 and 3 the bolt.
var exactRates = map[int]map[string]float64{
	1: {"instance.emitted": 2000, "instance.acked": 1990, "instance.failed": 4, "instance.timed.out": 6,
		"instance.complete.latency.count": 1990, "instance.complete.latency.nanos": 1990 * 3e6, "process.cpu.seconds": 0.5},
	2: {"instance.emitted": 1000, "instance.executed": 1000, "instance.execute.nanos": 1000 * 0.4e6,
		"instance.errors": 1, "instance.dropped": 2, "process.cpu.seconds": 0.25},
	3: {"instance.emitted": 1000, "instance.executed": 1000, "instance.execute.nanos": 1000 * 0.4e6,
		"instance.errors": 1, "instance.dropped": 2, "process.cpu.seconds": 0.25},
}

var exactLevels = map[int]map[string]float64{
	1: {"process.rss.bytes": 64 << 20, "instance.pending.roots": 100},
	2: {"process.rss.bytes": 32 << 20},
	3: {"process.rss.bytes": 32 << 20},
}

func (s *exactSource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	now := s.now
	s.mu.Unlock()
	st := map[string]any{"topology": "wc", "topology_id": "wc-1"}
	comps := map[string]map[string]any{"words": {"tasks": map[string]any{}}, "count": {"tasks": map[string]any{}}}
	for task, rates := range exactRates {
		// Task t reports at t0 + phase + k*interval, each report late by
		// up to 40ms (a jitter that repeats every 3 reports).
		phase := time.Duration(task) * 1300 * time.Millisecond
		k := int(now.Sub(s.t0.Add(phase)) / s.interval)
		at := s.t0.Add(phase + time.Duration(k)*s.interval + time.Duration(k%3)*20*time.Millisecond)
		if at.After(now) {
			at = at.Add(-s.interval)
		}
		m := map[string]float64{"process.pid": float64(100 + task), "process.start.unix": 1}
		secs := at.Sub(s.t0).Seconds()
		for n, v := range rates {
			m[n] = v * secs
		}
		for n, v := range exactLevels[task] {
			m[n] = v
		}
		comp := "count"
		if task == 1 {
			comp = "words"
		}
		// The executor reports the task's resources at another time.
		comps[comp]["tasks"].(map[string]any)[strconv.Itoa(task)] = map[string]any{
			"container": 1, "unix_nanos": now.UnixNano(), "instance_unix_nanos": at.UnixNano(), "metrics": m}
	}
	st["components"] = comps
	_ = json.NewEncoder(w).Encode(st)
}

// TestRatesFromReportTimes: whatever the pace of the tracker's polls and
// of the instances' reports (polls every 5s and reports every 10s, as by
// default; polls every 3s and reports every 7s; polls every 10s and
// reports every 4s), every rate of the timeline (per component and per
// task, fine and coarse), the list's throughput and the cluster's
// aggregate are within 2% of the exact rates, as are the latencies and
// the levels.
func TestRatesFromReportTimes(t *testing.T) {
	for _, tc := range []struct{ poll, report time.Duration }{
		{5 * time.Second, 10 * time.Second}, {3 * time.Second, 7 * time.Second}, {10 * time.Second, 4 * time.Second},
	} {
		t.Run(fmt.Sprintf("poll%v-report%v", tc.poll, tc.report), func(t *testing.T) {
			checkExactRates(t, tc.poll, tc.report)
		})
	}
}

func checkExactRates(t *testing.T, poll, report time.Duration) {
	t.Setenv("EGRET_HOME", t.TempDir())
	c, err := conf.Load(conf.LoadOptions{Cluster: "local", ConfigPath: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	src := &exactSource{now: t0, t0: t0, interval: report}
	tm := httptest.NewServer(src)
	defer tm.Close()
	store := memory.NewStore()
	tr, err := New(Options{Clusters: []*conf.Cluster{c}, Backends: memBackends{store}, SampleInterval: poll,
		Now: func() time.Time { src.mu.Lock(); defer src.mu.Unlock(); return src.now }})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	tp := &topology.Topology{Name: "wc", ID: "wc-1", Components: []topology.Component{
		{Name: "words", Kind: topology.Spout, Parallelism: 1, Outputs: []topology.Stream{{ID: topology.DefaultStream, Fields: []string{"word"}}}},
		{Name: "count", Kind: topology.Bolt, Parallelism: 2, Inputs: []topology.Input{{Component: "words", Stream: topology.DefaultStream, Grouping: topology.Shuffle}}},
	}}
	pp := &plan.PackingPlan{TopologyID: "wc-1", Containers: []plan.Container{{ID: 1, Instances: []plan.Instance{
		{Component: "words", TaskID: 1}, {Component: "count", TaskID: 2}, {Component: "count", TaskID: 3, Index: 1}}}}}
	es := &egretpb.ExecutionState{TopologyName: "wc", TopologyId: "wc-1", Cluster: "local"}
	st := state.New(store.NewSession())
	if err := st.Submit(ctx, state.Submission{Topology: tp, Plan: pp, ExecutionState: es}); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(tm.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	if err := st.RegisterTManager(ctx, &egretpb.TManagerLocation{TopologyName: "wc", TopologyId: "wc-1", Host: host, HttpPort: int32(p)}); err != nil {
		t.Fatal(err)
	}
	// Ten minutes of polls, starting 1.7s after the topology started.
	src.now = t0.Add(1700 * time.Millisecond)
	for i := 0; i < int(10*time.Minute/poll); i++ {
		tr.pollAll(ctx)
		src.mu.Lock()
		src.now = src.now.Add(poll)
		src.mu.Unlock()
	}

	ui := httptest.NewServer(tr.Handler())
	defer ui.Close()
	within := func(what string, got *float64, want float64) {
		t.Helper()
		if got == nil {
			t.Errorf("%s: unknown, want %.4g", what, want)
			return
		}
		if math.Abs(*got-want) > 0.02*math.Abs(want)+1e-9 {
			t.Errorf("%s = %.6g, want %.6g (within 2%%)", what, *got, want)
		}
	}
	// want is the exact value of a series for a set of tasks.
	want := func(series string, tasks ...int) float64 {
		var sum, nanos, count float64
		for _, task := range tasks {
			r, l := exactRates[task], exactLevels[task]
			switch series {
			case "emit_rate":
				sum += r["instance.emitted"]
			case "execute_rate":
				sum += r["instance.executed"]
			case "ack_rate":
				sum += r["instance.acked"]
			case "fail_rate":
				sum += r["instance.failed"]
			case "timeout_rate":
				sum += r["instance.timed.out"]
			case "error_rate":
				sum += r["instance.errors"]
			case "drop_rate":
				sum += r["instance.dropped"]
			case "cpu_cores":
				sum += r["process.cpu.seconds"]
			case "rss_bytes":
				sum += l["process.rss.bytes"]
			case "pending_roots":
				sum += l["instance.pending.roots"]
			case "busy": // the busiest task's share of time executing
				sum = max(sum, r["instance.execute.nanos"]/1e9)
			case "execute_latency_ms":
				nanos, count = nanos+r["instance.execute.nanos"], count+r["instance.executed"]
			case "complete_latency_ms":
				nanos, count = nanos+r["instance.complete.latency.nanos"], count+r["instance.complete.latency.count"]
			}
		}
		if count > 0 {
			return nanos / count / 1e6
		}
		return sum
	}
	// has says whether the tasks report what a series derives from.
	has := func(series string, tasks ...int) bool {
		for _, task := range tasks {
			for n := range exactRates[task] {
				if seriesOf(n) == series || series == "busy" && n == executeNanos {
					return true
				}
			}
			for n := range exactLevels[task] {
				if seriesOf(n) == series {
					return true
				}
			}
		}
		return false
	}
	// check checks a column: unknown until the tasks' second reports,
	// then every point right.
	check := func(what string, col []*float64, known bool, want float64) {
		t.Helper()
		i := 0
		for i < len(col) && col[i] == nil && i < 3 {
			i++
		}
		for ; i < len(col); i++ {
			if !known {
				if col[i] != nil {
					t.Errorf("%s[%d] = %v, want unknown", what, i, *col[i])
				}
				continue
			}
			within(fmt.Sprintf("%s[%d]", what, i), col[i], want)
		}
	}
	type tl struct {
		Timestamps []float64                              `json:"timestamps"`
		Components map[string]map[string][]*float64       `json:"components"`
		Instance   struct{ Series map[string][]*float64 } `json:"instance"`
	}
	fetch := func(q string) tl {
		t.Helper()
		resp, err := http.Get(ui.URL + "/topologies/metrics/timeline?cluster=local&topology=wc" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out tl
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("timeline%s: %d", q, resp.StatusCode)
		}
		return out
	}
	tasksOf := map[string][]int{"words": {1}, "count": {2, 3}}
	for _, res := range []string{"fine", "coarse"} {
		f := fetch("&resolution=" + res)
		if len(f.Timestamps) < 5 {
			t.Fatalf("%s timeline: %d samples", res, len(f.Timestamps))
		}
		for comp, tasks := range tasksOf {
			for _, series := range TimelineSeries {
				check(res+" "+comp+" "+series, f.Components[comp][series], has(series, tasks...), want(series, tasks...))
			}
		}
	}
	for task := 1; task <= 3; task++ {
		f := fetch("&instance=" + strconv.Itoa(task))
		for _, series := range TimelineSeries {
			check(fmt.Sprintf("task %d %s", task, series), f.Instance.Series[series], has(series, task), want(series, task))
		}
	}
	within("the list's throughput", tr.throughput("local", "wc", "wc-1"), 2000)
	m := tr.clusterMetrics("local")
	within("the cluster's throughput", &m.Throughput, 2000)
	within("the cluster's execute rate", &m.ExecuteRate, 2000)
	within("the cluster's ack rate", &m.AckRate, 1990)
	within("the cluster's fail rate", &m.FailRate, 4)
	within("the cluster's cpu", &m.CPUCores, 1)
	within("the cluster's memory", &m.RSSBytes, 128<<20)
}

// seriesOf is the series a raw metric feeds ("" for none).
func seriesOf(metric string) string {
	for _, r := range rateOf {
		if r.metric == metric {
			return TimelineSeries[r.series]
		}
	}
	for _, l := range latencyOf {
		if l.nanos == metric {
			return TimelineSeries[l.series]
		}
	}
	for _, l := range levelOf {
		if l.metric == metric {
			return TimelineSeries[l.series]
		}
	}
	return ""
}
