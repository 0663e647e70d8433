package tracker

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

// TestRenderLog: JSON lines become text with their fields, a multi-line
// field on its own lines, other lines as they are; a range is cut to
// whole lines (the first when it starts inside one, the last while it is
// being written); grep keeps matching lines.
func TestRenderLog(t *testing.T) {
	log := `{"level":"info","ts":1796000000.5,"logger":"instance","caller":"x.go:1","msg":"subprocess started","subprocess_pid":42}
{"level":"error","ts":1796000001,"logger":"instance","msg":"the subprocess ended","error":"Traceback (most recent call last):\n  File \"split.py\", line 9\nValueError: bad"}
panic: not json
{"level":"warn","ts":1796000002,"msg":"partial`
	lines, from, to := renderLog([]byte(log), 0, int64(len(log)+10), "")
	if len(lines) != 3 || from != 0 || to != int64(strings.LastIndexByte(log, '\n')+1) {
		t.Fatalf("%d lines [%d,%d): %+v", len(lines), from, to, lines)
	}
	if want := "2026-12-02T"; !strings.HasPrefix(lines[0].Text, lines[0].Time) || !strings.Contains(lines[0].Time, "T") || lines[0].Level != "info" {
		t.Errorf("line 0 %+v (want a time like %s...)", lines[0], want)
	}
	if !strings.Contains(lines[0].Text, "INFO  instance  subprocess started subprocess_pid=42 (x.go:1)") {
		t.Errorf("line 0 text %q", lines[0].Text)
	}
	if !strings.Contains(lines[1].Text, "ERROR instance  the subprocess ended\nerror:\nTraceback (most recent call last):\n  File \"split.py\", line 9\nValueError: bad") {
		t.Errorf("line 1 text %q", lines[1].Text)
	}
	if lines[2].Text != "panic: not json" || lines[2].Offset != int64(strings.Index(log, "panic")) {
		t.Errorf("line 2 %+v", lines[2])
	}
	// From the middle of the first line: it is dropped.
	lines, from, _ = renderLog([]byte(log[5:]), 5, int64(len(log)), "")
	if len(lines) != 2 || from != int64(strings.IndexByte(log, '\n')+1) {
		t.Errorf("from the middle: %d lines from %d", len(lines), from)
	}
	lines, _, _ = renderLog([]byte(log), 0, int64(len(log)), "VALUEERROR")
	if len(lines) != 1 || lines[0].Level != "error" {
		t.Errorf("grep: %+v", lines)
	}
}

// TestPercentiles: quantiles of the buckets counted between two reports,
// interpolated in their bucket.
func TestPercentiles(t *testing.T) {
	h := "instance.execute.latency"
	prev := map[string]float64{}
	cur := map[string]float64{}
	for _, b := range []string{"1us", "4us", "16us", "64us", "256us", "1ms", "4ms", "16ms", "64ms", "256ms", "1s", "4s", "16s", "inf"} {
		prev[h+".le."+b], cur[h+".le."+b] = 1000, 1000
	}
	// Since prev: 90 in (256us, 1ms], 10 in (4ms, 16ms].
	cur[h+".le.1ms"] += 90
	cur[h+".le.16ms"] += 10
	p := percentiles(prev, cur, h)
	near := func(name string, want float64) {
		if math.Abs(p[name]-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, p[name], want)
		}
	}
	near("p50", 0.256+(1-0.256)*50/90)
	near("p90", 1)
	near("p99", 4+12*9.0/10)
	if percentiles(cur, cur, h) != nil {
		t.Error("nothing counted: want nil")
	}
	if percentiles(nil, map[string]float64{}, h) != nil {
		t.Error("no histogram: want nil")
	}
}

// TestCheckpointHistory: a new complete checkpoint id joins the history
// once, with the time it completed; aborts and failures become events.
func TestCheckpointHistory(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	st := func(id, age, failed float64, reported time.Time) *tmStats {
		s := &tmStats{Containers: map[string]map[string]struct {
			UnixNanos int64              `json:"unix_nanos"`
			Metrics   map[string]float64 `json:"metrics"`
		}{}}
		s.Containers["0"] = map[string]struct {
			UnixNanos int64              `json:"unix_nanos"`
			Metrics   map[string]float64 `json:"metrics"`
		}{"tmanager": {UnixNanos: reported.UnixNano(), Metrics: map[string]float64{
			"checkpoint.last.complete.id": id, "checkpoint.last.complete.age.seconds": age, "checkpoint.last.duration.ms": 120,
			"checkpoint.last.size.bytes": 4096, "checkpoint.failed": failed, "checkpoint.completed": id}}}
		return s
	}
	tt := &topoTrack{procs: map[int]*procTrack{}}
	tt.recordConsole(st(1, 2, 0, at), at, 64)
	tt.recordConsole(st(1, 3, 0, at.Add(time.Second)), at.Add(time.Second), 64)
	tt.recordConsole(st(2, 0.5, 1, at.Add(5*time.Second)), at.Add(5*time.Second), 64)
	c := tt.console
	if len(c.checkpoints) != 2 || c.checkpoints[0].ID != 1 || c.checkpoints[1].ID != 2 {
		t.Fatalf("history %+v", c.checkpoints)
	}
	if got, want := c.checkpoints[0].CompletedUnix, unixSeconds(at.Add(-2*time.Second)); got != want {
		t.Errorf("completed at %v, want %v", got, want)
	}
	if len(c.ckptEvents) != 1 || c.ckptEvents[0].Kind != "failed" || c.ckptEvents[0].Count != 1 {
		t.Errorf("events %+v", c.ckptEvents)
	}
}

// TestClusterAggregateCountsDaemons: the cluster's CPU and memory sum the
// instances' (from the timeline) and every daemon's (their CPU from two
// reports).
func TestClusterAggregateCountsDaemons(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	v := nanValues()
	v[9], v[10] = 0.5, 100
	tt := &topoTrack{id: "x", fine: []sample{{at: at, comps: map[string]*values{"c": v}}}}
	k := daemonKey{1, "stmgr"}
	tt.console.dbefore = map[daemonKey]report{k: {at: at, m: map[string]float64{mCPUSeconds: 10, mRSS: 40}}}
	tt.console.dlast = map[daemonKey]report{k: {at: at.Add(4 * time.Second), m: map[string]float64{mCPUSeconds: 11, mRSS: 50}},
		{0, "tmanager"}: {at: at, m: map[string]float64{mRSS: 7}}}
	tr := &Tracker{tracks: map[trackKey]*topoTrack{{"local", "x"}: tt}}
	m := tr.clusterMetrics("local")
	if m.Topologies != 1 || math.Abs(m.CPUCores-0.75) > 1e-9 || m.RSSBytes != 157 {
		t.Errorf("aggregate %+v, want cpu 0.75 (0.5 + 1s/4s) and rss 157", m)
	}
}

// TestHealthCrashLoop: a bolt restarted 12 times, 3 of them within 10
// minutes, makes the topology critical; restarts long ago only a warning;
// none (with every task reporting) healthy.
func TestHealthCrashLoop(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	topo := &topology.Topology{Name: "wc", ID: "wc-1", Components: []topology.Component{
		{Name: "words", Kind: topology.Spout, Parallelism: 1}, {Name: "count", Kind: topology.Bolt, Parallelism: 1}}}
	r := &resolved{topo: topo, es: &egretpb.ExecutionState{SubmitTimeUnix: now.Add(-time.Hour).Unix()}}
	track := func(restarts int, times ...time.Time) *topoTrack {
		v := nanValues()
		v[0], v[1] = 10, 10
		tt := &topoTrack{id: "wc-1", taskComp: map[int]string{1: "words", 2: "count"},
			procs: map[int]*procTrack{1: {}, 2: {restarts: restarts}},
			fine:  []sample{{at: now, comps: map[string]*values{"words": v, "count": v}, tasks: map[int]*values{1: v, 2: v}}}}
		tt.console.restartTimes = map[int][]time.Time{2: times}
		return tt
	}
	tr := &Tracker{}
	for _, tc := range []struct {
		tt     *topoTrack
		level  string
		reason string
	}{
		{track(12, now.Add(-time.Minute), now.Add(-2*time.Minute), now.Add(-3*time.Minute)), healthCritical, "count restarted 3 times in the last 10m0s"},
		{track(12, now.Add(-time.Hour)), healthWarning, "count restarted 12 time(s)"},
		{track(0), healthHealthy, ""},
	} {
		out := tr.overviewLocked(tc.tt, r, "running", nil, now)
		h := out["health"].(healthJSON)
		if h.Level != tc.level || tc.reason != "" && !strings.Contains(strings.Join(h.Reasons, "|"), tc.reason) {
			t.Errorf("health %+v, want %s with %q", h, tc.level, tc.reason)
		}
		if up := out["uptime_seconds"].(float64); up != 3600 {
			t.Errorf("uptime %v", up)
		}
	}
}
