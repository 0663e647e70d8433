// Command egret-bench runs Egret's benchmark suite (issue 7): a
// calibration of this machine's transports, T1 ConstSpoutNullBolt (1 and 2
// containers, acking off and on), T2 Heron word count (parallelism 1 and
// 2), T3 sentence word count (maximum throughput with acking, then latency
// at 25%, 50% and 80% of it), each on fresh local clusters measured from
// /proc and the metrics files, and the Go micro-benchmarks. It writes JSON
// results to bench/results and, with -report, rewrites the generated
// section of docs/benchmarks.md. It prints figures and never judges them
// by exit code: the report says which targets were met.
//
//	go run ./bench/cmd/egret-bench -report docs/benchmarks.md   # what make bench runs
//	go run ./bench/cmd/egret-bench -quick                       # about a minute
//	go run ./bench/cmd/egret-bench -list                        # the benchmarks
//	go run ./bench/cmd/egret-bench -only t3 -no-micro           # one group
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/egret-stream/egret/bench/harness"
)

// microPackages are the packages with Benchmark functions (full and
// quick): the tuple codec and fields hash (core/tuple), the bounded queue
// (daemons/wire), batch encode/decode and the in-process two-hop path
// (daemons/stmgr), the in-process runner (daemons/instance/inproc), the
// XOR ledger (daemons/acking).
var (
	microPackages      = []string{"./core/tuple/", "./daemons/wire/", "./daemons/instance/...", "./daemons/stmgr/", "./daemons/acking/", "./api/window/", "./api/streamlet/"}
	microPackagesQuick = []string{"./core/tuple/", "./daemons/wire/", "./daemons/acking/"}
)

// topologies are the benchmark topologies' packages.
var topologies = map[string]string{
	"constnull":    "./bench/topologies/constnull",
	"heronwc":      "./bench/topologies/heronwc",
	"sentencewc":   "./bench/topologies/sentencewc",
	"sentencewcpy": "./bench/topologies/sentencewcpy",
	"windowedwc":   "./bench/topologies/windowedwc",
}

// reserved are the groups built elsewhere that the report keeps a place
// for; to integrate one, append a harness.External to o.External in main.
var reserved = map[string]string{
	"T4": "bench/backpressure",
	"T5": "bench/recovery",
}

// quickSet are the benchmarks of -quick.
var quickSet = map[string]bool{
	"t1-constnull-2c":         true,
	"t1-constnull-2c-ack1000": true,
	"t3-sentencewc-max":       true,
	"t3-sentencewc-50pct":     true,
}

// suite returns every cluster benchmark with its windows; python is the
// bin directory of the virtualenv with pystorm ("": no Python benchmark)
// and resources the Python split bolt's directory.
func suite(warmup, window time.Duration, runs int, python, resources string) []harness.Bench {
	var out []harness.Bench
	add := func(name, group string, w harness.Workload, profile bool) {
		out = append(out, harness.Bench{Name: name, Group: group, Workload: w, Warmup: warmup, Window: window, Runs: runs, Profile: profile})
	}
	for _, c := range []int{1, 2} {
		add(fmt.Sprintf("t1-constnull-%dc", c), "T1", harness.ConstNull("", c, 1, 1, -1), c == 2)
		for _, p := range []int{1000, 10000} {
			add(fmt.Sprintf("t1-constnull-%dc-ack%d", c, p), "T1", harness.ConstNull("", c, 1, 1, p), false)
		}
	}
	// Issue 18: the same across 2 containers with each container's
	// stream manager and instances in one process.
	add("t1-constnull-2c-ppc", "T1", harness.ConstNull("", 2, 1, 1, -1).PerContainer(), true)
	add("t1-constnull-2c-ppc-ack10000", "T1", harness.ConstNull("", 2, 1, 1, 10000).PerContainer(), false)
	for _, p := range []int{1, 2} {
		add(fmt.Sprintf("t2-heronwc-p%d", p), "T2", harness.HeronWordCount("", p), false)
	}
	add("t3-sentencewc-max", "T3", harness.SentenceWordCount("", 1, 0), true)
	for _, pct := range []int{25, 50, 80} {
		b := harness.Bench{Name: fmt.Sprintf("t3-sentencewc-%dpct", pct), Group: "T3", Workload: harness.SentenceWordCount("", 1, 0),
			Warmup: warmup, Window: window, Runs: runs, RateOf: "t3-sentencewc-max", RateFraction: float64(pct) / 100}
		out = append(out, b)
	}
	// Issue 18: T3 at-most-once, and T3 with each container in one
	// process (at-least-once: the maximum and the latency at half of it;
	// at-most-once: the maximum).
	add("t3-sentencewc-amo-max", "T3", harness.SentenceWordCountAtMostOnce("", 1, 0), false)
	add("t3-sentencewc-ppc-max", "T3", harness.SentenceWordCount("", 1, 0).PerContainer(), true)
	out = append(out, harness.Bench{Name: "t3-sentencewc-ppc-50pct", Group: "T3", Workload: harness.SentenceWordCount("", 1, 0).PerContainer(),
		Warmup: warmup, Window: window, Runs: runs, RateOf: "t3-sentencewc-ppc-max", RateFraction: 0.5})
	add("t3-sentencewc-ppc-amo-max", "T3", harness.SentenceWordCountAtMostOnce("", 1, 0).PerContainer(), false)
	// T3 under effectively-once (issue 22) at two checkpoint intervals:
	// the maximum, and the latency at the offered rate of the
	// at-least-once 50% benchmark, so both compare within one run.
	for _, v := range []struct {
		name     string
		interval time.Duration
	}{{"t3-sentencewc-eo1s", time.Second}, {"t3-sentencewc-eo10s", 10 * time.Second}} {
		name, w := v.name, harness.SentenceWordCountEO("", 1, v.interval, 0)
		add(name+"-max", "T3", w, false)
		out = append(out, harness.Bench{Name: name + "-50pct", Group: "T3", Workload: w,
			Warmup: warmup, Window: window, Runs: runs, RateOf: "t3-sentencewc-max", RateFraction: 0.5})
	}
	// Windowed word count (issue 15): 10 s tumbling and 10 s / 1 s
	// sliding event-time windows, at maximum throughput and at half of it
	// (with the window-close → result latency).
	for _, v := range []struct {
		name  string
		slide time.Duration
	}{{"tumbling", 0}, {"sliding", time.Second}} {
		w := harness.WindowedWordCount("", 1, v.slide, 0)
		add("w1-windowedwc-"+v.name+"-max", "W1", w, false)
		out = append(out, harness.Bench{Name: "w1-windowedwc-" + v.name + "-50pct", Group: "W1", Workload: w,
			Warmup: warmup, Window: window, Runs: runs, RateOf: "w1-windowedwc-" + v.name + "-max", RateFraction: 0.5})
	}
	if python != "" {
		// T3 with the split bolt in Python (multilang): its maximum, and
		// its latency at half of it.
		py := harness.SentenceWordCountPython("", 1, 0, python, resources)
		add("t3-sentencewcpy-max", "T3", py, false)
		out = append(out, harness.Bench{Name: "t3-sentencewcpy-50pct", Group: "T3", Workload: py,
			Warmup: warmup, Window: window, Runs: runs, RateOf: "t3-sentencewcpy-max", RateFraction: 0.5})
	}
	return out
}

// pythonResources are the files of the Python split bolt (relative to
// the module root).
const pythonResources = "bench/topologies/sentencewcpy/resources"

// pythonVenv returns the bin directory of the virtualenv with pystorm
// (scripts/pyvenv.sh creates it from PyPI on first use), or "" with a
// warning when Python is not available.
func pythonVenv(root string) string {
	cmd := exec.Command(filepath.Join(root, "scripts", "pyvenv.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "egret-bench: no Python virtualenv (%v): the T3 benchmarks with a Python split bolt are skipped\n", err)
		return ""
	}
	return strings.TrimSpace(string(out))
}

type props []string

func (p *props) String() string     { return strings.Join(*p, ",") }
func (p *props) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var o harness.SuiteOptions
	var quick, noCluster, noMicro, noCalib, noExternal, list bool
	var micro, only string
	var runs int
	var warmup, window time.Duration
	var extra props
	fs := flag.NewFlagSet("egret-bench", flag.ContinueOnError)
	fs.BoolVar(&quick, "quick", false, "a one-minute subset: one run each, short windows, fewer benchmarks")
	fs.StringVar(&o.Egret, "egret", "", "prebuilt egret binary (default: build ./cmd/egret)")
	fs.BoolVar(&list, "list", false, "list the cluster benchmarks and exit")
	fs.StringVar(&only, "only", "", "run only the cluster benchmarks whose name matches this regular expression (e.g. 't1-.*-2c$' or t3)")
	fs.BoolVar(&noCluster, "no-cluster", false, "skip the cluster benchmarks")
	fs.BoolVar(&noCalib, "no-calibration", false, "skip the calibration")
	fs.BoolVar(&noMicro, "no-micro", false, "skip the micro-benchmarks")
	fs.BoolVar(&noExternal, "no-external", false, "skip T4 (10 minutes) and T5 (about 3 minutes); -quick skips them unless -only names them (t4, t5)")
	fs.DurationVar(&warmup, "warmup", 0, "warm-up before each window (default 5s, quick 2s)")
	fs.DurationVar(&window, "window", 0, "measurement window (default 15s, quick 5s)")
	fs.IntVar(&runs, "runs", 0, "runs of each benchmark, each on a fresh cluster (default 3, quick 1)")
	fs.DurationVar(&o.MetricsInterval, "metrics-interval", time.Second, "egret.metrics.export.interval of the runs")
	fs.Var(&extra, "prop", "more config for every run: key=value (repeatable)")
	fs.BoolVar(&o.Keep, "keep", false, "keep each run's EGRET_HOME")
	fs.Float64Var(&o.FixedRate, "rate", 0, "offered rate (per second) of the fixed-rate benchmarks instead of a fraction of their maximum, to compare builds at the same load (0: the fraction)")
	fs.IntVar(&o.ProfileSeconds, "profile", 0, "profile T1 (2 containers, acking off) and T3 (maximum) with perf for this many seconds after their first run")
	fs.StringVar(&micro, "micro", "", "comma-separated packages of the micro-benchmarks (default: the make bench set)")
	fs.IntVar(&o.MicroCount, "micro-count", 0, "go test -count of the micro-benchmarks (default 3, quick 1)")
	fs.StringVar(&o.MicroBenchtime, "micro-benchtime", "", "go test -benchtime of the micro-benchmarks (default 500ms, quick 100ms)")
	fs.DurationVar(&o.Calibration.Duration, "calibration-time", 0, "time per calibration transport (default 2s, quick 500ms)")
	fs.StringVar(&o.ResultsDir, "results", "bench/results", "directory of the JSON results (relative to the module root)")
	fs.StringVar(&o.Report, "report", "", "markdown file whose generated section is rewritten (relative to the module root; default none)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "egret-bench: unexpected arguments %q\n", fs.Args())
		os.Exit(2)
	}
	if o.FixedRate < 0 || o.FixedRate > 0 && o.Report != "" {
		fmt.Fprintln(os.Stderr, "egret-bench: -rate must be positive and cannot be combined with -report (a fixed rate is not the report's fraction of the maximum)")
		os.Exit(2)
	}
	def := func(d *time.Duration, full, q time.Duration) {
		if *d == 0 {
			*d = full
			if quick {
				*d = q
			}
		}
	}
	def(&warmup, 5*time.Second, 2*time.Second)
	def(&window, 15*time.Second, 5*time.Second)
	def(&o.Calibration.Duration, 2*time.Second, 500*time.Millisecond)
	if runs == 0 {
		runs = 3
		if quick {
			runs = 1
		}
	}
	if o.MicroCount == 0 {
		o.MicroCount = 3
		if quick {
			o.MicroCount = 1
		}
	}
	if o.MicroBenchtime == "" {
		o.MicroBenchtime = "500ms"
		if quick {
			o.MicroBenchtime = "100ms"
		}
	}
	var re *regexp.Regexp
	if only != "" {
		var err error
		if re, err = regexp.Compile(only); err != nil {
			fmt.Fprintf(os.Stderr, "egret-bench: -only: %v\n", err)
			os.Exit(2)
		}
	}
	wd, err := os.Getwd()
	if err == nil {
		o.Root, err = harness.ModuleRoot(context.Background(), wd)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "egret-bench: %v\n", err)
		os.Exit(1)
	}
	python := ""
	if !noCluster && !list {
		python = pythonVenv(o.Root)
	}
	for _, b := range suite(warmup, window, runs, python, filepath.Join(o.Root, pythonResources)) {
		if (quick && re == nil && !quickSet[b.Name]) || (re != nil && !re.MatchString(b.Name)) {
			continue
		}
		if quick {
			b.Name += "-quick"
			if b.RateOf != "" {
				b.RateOf += "-quick"
			}
		}
		o.Benchmarks = append(o.Benchmarks, b)
	}
	if list {
		for _, b := range o.Benchmarks {
			fmt.Printf("%-28s %s  %s %s\n", b.Name, b.Group, b.Workload.Topology, strings.Join(b.Workload.Args, " "))
		}
		return
	}
	if noCluster {
		o.Benchmarks = nil
	}
	o.Calibrate, o.Micro, o.Props, o.Quick = !noCalib, !noMicro, extra, quick
	o.Topologies, o.Reserved = topologies, reserved
	for _, e := range externals() {
		named := re != nil && re.MatchString(strings.ToLower(e.Group))
		if !noExternal && (named || (re == nil && !quick)) {
			o.External = append(o.External, e)
		}
	}
	o.MicroPackages, o.MicroName, o.SuiteName = microPackages, "micro", "suite"
	if quick {
		o.MicroPackages, o.MicroName, o.SuiteName = microPackagesQuick, "micro-quick", "suite-quick"
	}
	if micro != "" {
		o.MicroPackages = strings.Split(micro, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := harness.RunSuite(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "egret-bench: %v\n", err)
		os.Exit(1)
	}
}
