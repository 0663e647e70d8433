package harness

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Target is one of issue 7's targets and whether the suite met it.
type Target struct {
	// Name says what is targeted; Bench the benchmark it is read from;
	// Figure the figure compared, with its unit.
	Name   string `json:"name"`
	Bench  string `json:"bench"`
	Figure string `json:"figure"`
	// AtLeast is true for a floor (got ≥ want), false for a ceiling
	// (got ≤ want).
	AtLeast bool    `json:"at_least"`
	Want    float64 `json:"want"`
	// Got is the median over the runs; Measured is false when the
	// benchmark did not run (Note says why).
	Got      float64 `json:"got"`
	Measured bool    `json:"measured"`
	Met      bool    `json:"met"`
	Note     string  `json:"note,omitempty"`
}

// Status is "met", "missed" or "not measured".
func (t Target) Status() string {
	switch {
	case !t.Measured:
		return "not measured"
	case t.Met:
		return "met"
	default:
		return "missed"
	}
}

// targetSpec reads a target's figure from a cluster result.
type targetSpec struct {
	name, bench, figure string
	atLeast             bool
	want                float64
	get                 func(*ClusterResult) (float64, bool)
	// of, when set, makes the figure a ratio: get of bench divided by get
	// of the benchmark of (same suite run).
	of string
}

func summaryFigure(key string) func(*ClusterResult) (float64, bool) {
	return func(c *ClusterResult) (float64, bool) {
		s, ok := c.Summary[key]
		return s.Median, ok && s.N > 0
	}
}

func latencyP99(name string) func(*ClusterResult) (float64, bool) {
	return func(c *ClusterResult) (float64, bool) {
		l, ok := c.Latency[name]
		return l.P99.Median, ok && l.P99.N > 0
	}
}

func latencyP999(name string) func(*ClusterResult) (float64, bool) {
	return func(c *ClusterResult) (float64, bool) {
		l, ok := c.Latency[name]
		return l.P999.Median, ok && l.P999.N > 0
	}
}

// targets are issue 7's targets for this 2-core machine. Per-core figures
// divide by the measured engine CPU (Σ utime+stime of every engine
// process), not by nominal cores.
var targets = []targetSpec{
	{"T1 across 2 containers, acking off", "t1-constnull-2c", "tuples per CPU-second", true, 3e6, summaryFigure("tuples_per_cpu_second"), ""},
	{"T1 across 2 containers, acking on, max pending 1,000", "t1-constnull-2c-ack1000", "tuples per CPU-second", true, 1e6, summaryFigure("tuples_per_cpu_second"), ""},
	{"T1 across 2 containers, acking on, max pending 10,000", "t1-constnull-2c-ack10000", "tuples per CPU-second", true, 1e6, summaryFigure("tuples_per_cpu_second"), ""},
	{"T3 sentence word count, acking on, maximum throughput", "t3-sentencewc-max", "sentences per CPU-second", true, 150e3, summaryFigure("tuples_per_cpu_second"), ""},
	{"T3 at 50% of the maximum: p99 latency (scheduled emit → count bolt)", "t3-sentencewc-50pct", "ms", false, 5, latencyP99("count"), ""},
	{"T3 effectively-once, 10 s checkpoints: throughput over at-least-once's (same run)", "t3-sentencewc-eo10s-max", "ratio of sentences per second", true, 0.8,
		summaryFigure("sink_tuples_per_sec"), "t3-sentencewc-max"},
	// Issue 18 (Flink's figures per CPU-second), in the best container
	// mode: process-per-container.
	{"Issue 18: T1 across 2 containers, acking off, process-per-container", "t1-constnull-2c-ppc", "tuples per CPU-second", true, 7e6, summaryFigure("tuples_per_cpu_second"), ""},
	{"Issue 18: T1 across 2 containers, acking on (max pending 10,000), process-per-container", "t1-constnull-2c-ppc-ack10000", "tuples per CPU-second", true, 2e6, summaryFigure("tuples_per_cpu_second"), ""},
	{"Issue 18: T3 at-most-once, process-per-container", "t3-sentencewc-ppc-amo-max", "sentences per CPU-second", true, 0.8e6, summaryFigure("tuples_per_cpu_second"), ""},
	{"Issue 18: T3 acking on, process-per-container", "t3-sentencewc-ppc-max", "sentences per CPU-second", true, 0.4e6, summaryFigure("tuples_per_cpu_second"), ""},
	{"Issue 18: T3 at 50% of the maximum, process-per-container: p99", "t3-sentencewc-ppc-50pct", "ms", false, 5, latencyP99("count"), ""},
	{"Issue 18: T3 at 50% of the maximum, process-per-container: p99.9", "t3-sentencewc-ppc-50pct", "ms", false, 10, latencyP999("count"), ""},
}

// baseName drops the -quick suffix of a benchmark's name.
func baseName(name string) string { return strings.TrimSuffix(name, "-quick") }

// EvaluateTargets checks issue 7's targets against the cluster results and
// adds the External benchmarks' targets.
func (r *Report) EvaluateTargets() []Target {
	byName := map[string]*ClusterResult{}
	for _, c := range r.Cluster {
		byName[baseName(c.Name)] = c
	}
	var out []Target
	for _, s := range targets {
		t := Target{Name: s.name, Bench: s.bench, Figure: s.figure, AtLeast: s.atLeast, Want: s.want}
		c := byName[s.bench]
		switch {
		case c == nil:
			t.Note = "not run in this suite"
		case c.Error != "":
			t.Bench = c.Name
			t.Note = "not measured: " + firstLine(c.Error)
		default:
			t.Bench = c.Name
			v, ok := s.get(c)
			if !ok {
				t.Note = "the result has no such figure"
				break
			}
			if s.of != "" {
				base := byName[s.of]
				if base == nil || base.Error != "" {
					t.Note = "not measured: " + s.of + " did not run"
					break
				}
				d, ok := s.get(base)
				if !ok || d <= 0 {
					t.Note = s.of + " has no such figure"
					break
				}
				v /= d
			}
			t.Got, t.Measured = v, true
			t.Met = (s.atLeast && v >= s.want) || (!s.atLeast && v <= s.want)
		}
		out = append(out, t)
	}
	for _, x := range r.External {
		if x.Result != nil {
			out = append(out, x.Result.Targets...)
		}
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func (t Target) wantText() string {
	op := "≤"
	if t.AtLeast {
		op = "≥"
	}
	return fmt.Sprintf("%s %s", op, num(t.Want))
}

// summary is the suite's summary file.
func (r *Report) summary(quick bool, started time.Time, resultsDir, root string) *SuiteResult {
	s := &SuiteResult{Machine: r.machine(), Quick: quick, Started: started.UTC().Truncate(time.Second), Seconds: time.Since(started).Seconds(),
		Calibration: r.Calibration, Targets: r.Targets}
	tcp, hasTCP := r.Calibration.Get(CalibrationTCP)
	for _, c := range r.Cluster {
		file := filepath.Join(resultsDir, c.Name+".json")
		if rel, err := filepath.Rel(root, file); err == nil && !strings.HasPrefix(rel, "..") {
			file = rel
		}
		bs := BenchSummary{Name: c.Name, Group: c.Group, Unit: unitOf(c.Workload), Error: c.Error, ResultFile: file, OfferedRate: c.Workload.OfferedRate,
			PerSec: c.Summary["sink_tuples_per_sec"], PerCPUSecond: c.Summary["tuples_per_cpu_second"], CPUSecondsPerM: c.Summary["cpu_seconds_per_million_tuples"]}
		if hasTCP && tcp.FramesPerSec > 0 {
			bs.FractionOfTCP = bs.PerSec.Median / tcp.FramesPerSec
		}
		if l, ok := c.Latency[sinkLatencyName(c)]; ok {
			bs.SinkLatencyP99Ms = l.P99.Median
		}
		if l, ok := c.Latency[c.Workload.Source+".complete"]; ok {
			bs.CompleteLatencyP99 = l.P99.Median
		}
		s.Benchmarks = append(s.Benchmarks, bs)
	}
	for _, x := range r.External {
		if s.External == nil {
			s.External = map[string]string{}
		}
		s.External[x.Group] = x.Title
	}
	return s
}
