package harness

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/proto/egretpb"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ppid     int
		cpu      float64
		wantErr  bool
	}{
		{"plain", "42 (egret) S 7 42 42 0 -1 4194560 1 0 0 0 250 130 0 0 20 0 9 0 100 1 1", 7, 3.8, false},
		{"spaces and parens in comm", "42 (a (b) c) R 9 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 1 1", 9, 0.03, false},
		{"no paren", "42 egret S 7", 0, 0, true},
		{"too short", "42 (egret) S 7 1 2", 0, 0, true},
		{"bad number", "42 (egret) S 7 42 42 0 -1 4194560 1 0 0 0 x 130 0", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ppid, cpu, err := parseStat([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (ppid != tc.ppid || math.Abs(cpu-tc.cpu) > 1e-9) {
				t.Errorf("got ppid %d cpu %v, want %d %v", ppid, cpu, tc.ppid, tc.cpu)
			}
		})
	}
}

func TestParseStatusAndMachineCPU(t *testing.T) {
	rss, hwm := parseStatus([]byte("Name:\tegret\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"))
	if rss != 1<<20 || hwm != 2<<20 {
		t.Errorf("rss %d hwm %d", rss, hwm)
	}
	m, err := parseMachineCPU([]byte("cpu  100 20 30 400 50 6 4 10 0 0\ncpu0 1 2 3 4 5 6 7 8 9 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (MachineCPU{Busy: 1.6, Idle: 4.5, Steal: 0.1}); math.Abs(m.Busy-want.Busy) > 1e-9 || math.Abs(m.Idle-want.Idle) > 1e-9 || math.Abs(m.Steal-want.Steal) > 1e-9 {
		t.Errorf("got %+v, want %+v", m, want)
	}
	if _, err := parseMachineCPU([]byte("intr 1 2 3\n")); err == nil {
		t.Error("no cpu line: want an error")
	}
}

// fakeProc writes a /proc-like tree: pid → (ppid, utime ticks, VmRSS kB).
func fakeProc(t *testing.T, procs map[int][3]int) string {
	root := t.TempDir()
	for pid, p := range procs {
		dir := filepath.Join(root, itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := itoa(pid) + " (x) S " + itoa(p[0]) + " 0 0 0 -1 0 0 0 0 0 " + itoa(p[1]) + " 0 0 0 20 0 1 0 1 1 1"
		status := "VmHWM:\t" + itoa(2*p[2]) + " kB\nVmRSS:\t" + itoa(p[2]) + " kB\n"
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestDescendants(t *testing.T) {
	root := fakeProc(t, map[int][3]int{
		1:  {0, 0, 1},
		10: {1, 100, 10}, // scheduler
		11: {10, 200, 20},
		12: {10, 300, 30},
		13: {12, 400, 40}, // grandchild
		20: {1, 500, 50},  // unrelated
	})
	got, err := descendants(root, 10)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	var cpu float64
	for pid, p := range got {
		pids = append(pids, pid)
		cpu += p.CPUSeconds
	}
	if len(pids) != 4 || cpu != 10 {
		t.Fatalf("got %v with %v cpu-s, want 10..13 with 10", pids, cpu)
	}
	if p := got[13]; p.RSSBytes != 40<<10 || p.PeakRSSBytes != 80<<10 {
		t.Errorf("pid 13: %+v", p)
	}
	if got, _ := descendants(root, 99); len(got) != 0 {
		t.Errorf("a missing root has descendants %v", got)
	}
}

func TestSeriesAt(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := Series{{t0, 100}, {t0.Add(10 * time.Second), 200}, {t0.Add(20 * time.Second), 400}}
	for _, tc := range []struct {
		at      time.Duration
		want    float64
		wantErr bool
	}{
		{0, 100, false},
		{5 * time.Second, 150, false},
		{15 * time.Second, 300, false},
		{20 * time.Second, 400, false},
		{-time.Second, 0, true},
		{21 * time.Second, 0, true},
	} {
		got, err := s.At(t0.Add(tc.at))
		if (err != nil) != tc.wantErr || (err == nil && got != tc.want) {
			t.Errorf("At(+%s) = %v, %v; want %v (error %v)", tc.at, got, err, tc.want, tc.wantErr)
		}
	}
	if _, err := (Series{}).At(t0); err == nil {
		t.Error("empty series: want an error")
	}
	for _, tc := range []struct {
		from, to time.Duration
		want     float64
		ok       bool
	}{
		{0, 20 * time.Second, 15, true},                 // bracketed
		{5 * time.Second, 15 * time.Second, 15, true},   // interpolated
		{0, 30 * time.Second, 15, true},                 // samples inside span 20 of 30 s
		{-30 * time.Second, 30 * time.Second, 0, false}, // they span 20 of 60 s
		{15 * time.Second, 30 * time.Second, 0, false},  // one sample inside
		{10 * time.Second, 10 * time.Second, 0, false},  // empty interval
	} {
		got, ok := s.rate(t0.Add(tc.from), t0.Add(tc.to))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("rate(+%s, +%s) = %v, %v; want %v, %v", tc.from, tc.to, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTailerFollowsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	pub := func(task int32, at int64, v float64) string {
		return line(t, &egretpb.MetricsPublish{Source: "instance", Component: "null", TaskId: task, UnixNanos: at,
			Metrics: []*egretpb.Metric{{Name: "instance.executed", Value: v}}})
	}
	tl := &tailer{path: path, task: 2, metric: "instance.executed"}
	if err := tl.poll(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	whole := pub(2, 1e9, 10) + pub(3, 1e9, 99) + pub(2, 2e9, 20)
	cut := len(whole) - 10
	if err := os.WriteFile(path, []byte(whole[:cut]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tl.poll(); err != nil || len(tl.series) != 1 {
		t.Fatalf("first poll: %v, %v", tl.series, err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(whole[cut:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctx := context.Background()
	s, err := tl.next(ctx, time.Unix(1, 5e8), time.Now().Add(5*time.Second))
	if err != nil || s.Value != 20 {
		t.Fatalf("next = %+v, %v", s, err)
	}
	if got := tl.interval(time.Minute); got != time.Second {
		t.Errorf("interval %s", got)
	}
	if _, err := tl.next(ctx, time.Unix(3, 0), time.Now()); err == nil {
		t.Error("no later sample: want an error at the deadline")
	}
}

func line(t *testing.T, m *egretpb.MetricsPublish) string {
	b, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func TestReadSeries(t *testing.T) {
	pub := func(src, comp string, container, task int32, at int64, name string, v float64) *egretpb.MetricsPublish {
		return &egretpb.MetricsPublish{Source: src, Component: comp, Container: container, TaskId: task, UnixNanos: at,
			Metrics: []*egretpb.Metric{{Name: "other", Value: -1}, {Name: name, Value: v}}}
	}
	content := line(t, pub("instance", "null", 2, 2, 2e9, "instance.executed", 20)) +
		line(t, pub("instance", "null", 2, 2, 1e9, "instance.executed", 10)) + // out of order
		line(t, pub("instance", "const", 1, 1, 1e9, "instance.executed", 0)) +
		line(t, pub("stmgr", "", 2, 0, 1e9, "stmgr.tuples.lost", 3)) +
		`{"source":"instance","component":"null","taskId":2,"unixNanos":"3000000000","metrics":[{"name":"instance.exec` // torn last line
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSeries(path, Source{Kind: "instance", Component: "null"}, "instance.executed")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]Series{2: {{time.Unix(1, 0), 10}, {time.Unix(2, 0), 20}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("instance series %v, want %v", got, want)
	}
	got, err = ReadSeries(path, Source{Kind: "stmgr"}, "stmgr.tuples.lost")
	if err != nil || len(got[2]) != 1 || got[2][0].Value != 3 {
		t.Errorf("stmgr series %v, %v", got, err)
	}
	if err := os.WriteFile(path, []byte("not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSeries(path, Source{Kind: "stmgr"}, "x"); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("garbage: err = %v, want one naming line 1", err)
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Stat
	}{
		{nil, Stat{}},
		{[]float64{3}, Stat{3, 3, 3, 1}},
		{[]float64{5, 1, 3}, Stat{3, 1, 5, 3}},
		{[]float64{4, 1, 3, 2}, Stat{2.5, 1, 4, 4}},
		{[]float64{math.NaN(), 2}, Stat{2, 2, 2, 1}},
	} {
		if got := Summarize(tc.in); got != tc.want {
			t.Errorf("Summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseBench(t *testing.T) {
	out := `goos: linux
pkg: github.com/egret-stream/egret/core/tuple
BenchmarkAppendValues-2   	32610504	        43.00 ns/op	 744.21 MB/s	       0 B/op	       0 allocs/op
BenchmarkAppendValues-2   	32610504	        41.00 ns/op	 750.00 MB/s	       0 B/op	       0 allocs/op
BenchmarkFieldsHash/string-2         	36765084	        37.01 ns/op	       0 B/op	       0 allocs/op
PASS
pkg: github.com/egret-stream/egret/daemons/stmgr
BenchmarkTwoHop-2         	  678504	      2028 ns/op	    493176 tuples/s	     206 B/op	       5 allocs/op
BenchmarkBroken-2  notanumber
ok  	github.com/egret-stream/egret/daemons/stmgr	7.323s
`
	got := ParseBench(strings.NewReader(out))
	if len(got) != 3 {
		t.Fatalf("got %d results: %+v", len(got), got)
	}
	a := got[0]
	if a.Package != "github.com/egret-stream/egret/core/tuple" || a.Name != "BenchmarkAppendValues" || a.Procs != 2 {
		t.Errorf("first: %+v", a)
	}
	if s := a.Figures["ns/op"]; s.N != 2 || s.Median != 42 || s.Min != 41 || s.Max != 43 {
		t.Errorf("ns/op %+v", s)
	}
	if !reflect.DeepEqual(a.Units, []string{"ns/op", "MB/s", "B/op", "allocs/op"}) {
		t.Errorf("units %v", a.Units)
	}
	if got[1].Name != "BenchmarkFieldsHash/string" {
		t.Errorf("sub-benchmark name %q", got[1].Name)
	}
	if h := got[2]; h.Package != "github.com/egret-stream/egret/daemons/stmgr" || h.Figures["tuples/s"].Median != 493176 {
		t.Errorf("two-hop: %+v", h)
	}
}

func TestPlacementAndKinds(t *testing.T) {
	pp := &plan.PackingPlan{Containers: []plan.Container{
		{ID: 1, Instances: []plan.Instance{{Component: "const", TaskID: 1}, {Component: "null", TaskID: 3}}},
		{ID: 2, Instances: []plan.Instance{{Component: "null", TaskID: 2}}},
	}}
	where, frac := placement(pp, "const", "null")
	if frac != 0.5 {
		t.Errorf("cross fraction %v, want 0.5", frac)
	}
	if !reflect.DeepEqual(where, map[string][]string{"container-1": {"const:1", "null:3"}, "container-2": {"null:2"}}) {
		t.Errorf("placement %v", where)
	}
	if _, frac := placement(pp, "const", "missing"); !math.IsNaN(frac) {
		t.Errorf("missing sink: fraction %v", frac)
	}
	for in, want := range map[string]string{"instance-null-2": "instance:null", "instance-a-b-12": "instance:a-b", "stmgr": "stmgr", "instance-x": "instance"} {
		if got := ProcessKind(in); got != want {
			t.Errorf("ProcessKind(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAccountCPU(t *testing.T) {
	start := &snapshot{
		procs:   map[int]ProcStat{1: {PID: 1, CPUSeconds: 1}, 2: {PID: 2, CPUSeconds: 10}, 3: {PID: 3, CPUSeconds: 5}},
		kinds:   map[int]string{1: "scheduler", 2: "instance:null", 3: "stmgr"},
		machine: MachineCPU{Busy: 100, Steal: 1},
	}
	stop := &snapshot{
		procs:   map[int]ProcStat{1: {PID: 1, CPUSeconds: 1}, 2: {PID: 2, CPUSeconds: 18, PeakRSSBytes: 7}, 4: {PID: 4, CPUSeconds: 2}},
		kinds:   map[int]string{1: "scheduler", 2: "instance:null", 4: "stmgr"},
		machine: MachineCPU{Busy: 116, Steal: 2},
	}
	r := &RunResult{WindowSeconds: 10}
	r.accountCPU(start, stop)
	if r.EngineCPUSeconds != 10 || r.EngineCores != 1 || r.CoresByKind["instance:null"] != 0.8 || r.CoresByKind["stmgr"] != 0.2 {
		t.Errorf("cpu: %+v", r)
	}
	if r.MachineBusyCores != 1.6 || math.Abs(r.OtherBusyCores-0.6) > 1e-9 || r.StealCores != 0.1 {
		t.Errorf("machine: busy %v other %v steal %v", r.MachineBusyCores, r.OtherBusyCores, r.StealCores)
	}
	if r.PeakRSSByKind["instance:null"] != 7 {
		t.Errorf("peak rss %v", r.PeakRSSByKind)
	}
	if len(r.Notes) != 2 {
		t.Errorf("want notes for the restarted stream manager, got %q", r.Notes)
	}
}

func TestParsePerfReport(t *testing.T) {
	out := []byte(`# Overhead  Pid:Command  Symbol
#
    10.00%  101:topology  [.] __vdso_clock_gettime
     5.00%  102:topology  [.] __vdso_clock_gettime
     4.00%  201:egret     [k] finish_task_switch.isra.0
     1.00%  999:other     [.] main.main

`)
	got := parsePerfReport(out, map[int]string{101: "instance:null", 102: "instance:null", 201: "stmgr"}, 2)
	want := []ProfileEntry{{15, "instance:null", "__vdso_clock_gettime"}, {4, "stmgr", "finish_task_switch.isra.0 (kernel)"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestNum(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 0.8127: "0.813", 0.00099: "0.00099", 42: "42", 123.4: "123", 9999: "9999",
		12345: "12.3 k", 999499: "999 k", 1.0229e6: "1.02 M", 1.2345e9: "1230 M", math.NaN(): "–"} {
		if got := num(in); got != want {
			t.Errorf("num(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestUpdateFileKeepsTextAroundTheMarkers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docs", "benchmarks.md")
	if err := Main.Update(path, "first\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), "# Benchmarks") || !strings.Contains(string(b), BeginMarker+"\n\nfirst\n"+EndMarker) {
		t.Fatalf("new file:\n%s", b)
	}
	edited := "# Mine\n\nintro\n\n" + BeginMarker + "\nold\n" + EndMarker + "\n\n## Analysis\n\nkept\n"
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Main.Update(path, "second\n"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	want := "# Mine\n\nintro\n\n" + BeginMarker + "\n\nsecond\n" + EndMarker + "\n\n## Analysis\n\nkept\n"
	if string(b) != want {
		t.Errorf("got:\n%s\nwant:\n%s", b, want)
	}
}

func TestWriteMarkdown(t *testing.T) {
	res := &ClusterResult{Name: "t1", Group: "T1", Workload: ConstNull("/bin/true", 2, 1, 1, -1), Machine: Machine{NProc: 2, CPUModel: "cpu", GoVersion: "go1.26"}}
	res.Settings.Runs = 2
	res.Runs = []RunResult{
		{Run: 1, SinkTuplesPerSec: 1e6, EngineCores: 1, CoresByKind: map[string]float64{"stmgr": 0.1}, Processes: map[string]int{"stmgr": 2}, PeakRSSByKind: map[string]int64{"stmgr": 1 << 20},
			Placement: map[string][]string{"container-1": {"const:1"}, "container-2": {"null:2"}}, CrossFraction: 1},
		{Run: 2, SinkTuplesPerSec: 2e6, EngineCores: 1, CoresByKind: map[string]float64{"stmgr": 0.3}, PeakRSSByKind: map[string]int64{"stmgr": 3 << 20}},
	}
	res.summarize()
	var b strings.Builder
	if err := (&Report{Cluster: []*ClusterResult{res}, Micro: &MicroResults{Count: 1, Results: ParseBench(strings.NewReader("pkg: p\nBenchmarkX-2 10 5.0 ns/op 3 tuples/s\n"))}}).WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| tuples/s executed by the null bolt | 1.5 M | 1 M – 2 M |",
		"### T1 ConstSpoutNullBolt",
		"| stmgr | 2 | 0.2 [0.1 – 0.3] | 2 [1 – 3] |",
		"container-1: const:1; container-2: null:2",
		"| p | BenchmarkX | 5 | – | – | 3 tuples/s |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestMachineFields(t *testing.T) {
	if got := memTotal("24684092 kB"); got != "23.5 GiB" {
		t.Errorf("memTotal = %q", got)
	}
	if got := memTotal("odd"); got != "odd" {
		t.Errorf("memTotal(odd) = %q", got)
	}
	if got := cpuinfoField([]byte("processor\t: 0\nmodel name\t: Xeon: fast\n"), "model name"); got != "Xeon: fast" {
		t.Errorf("cpuinfoField = %q", got)
	}
	if m := DescribeMachine(); m.NProc < 1 || m.GoVersion == "" {
		t.Errorf("DescribeMachine = %+v", m)
	}
}

func TestProcessKind(t *testing.T) {
	for name, want := range map[string]string{"instance-slow-2": "instance:slow", "instance-a-b-10": "instance:a-b", "stmgr": "stmgr", "instance-x": "instance"} {
		if got := ProcessKind(name); got != want {
			t.Errorf("ProcessKind(%q) = %q, want %q", name, got, want)
		}
	}
}
