// Command egret-bench runs Egret's benchmarks: T1 ConstSpoutNullBolt on a
// fresh local cluster (repeated, measured from /proc and the metrics
// files) and the Go micro-benchmarks, writes JSON results to bench/results
// and rewrites the generated section of docs/benchmarks.md. It prints
// figures and never judges them. See package bench/harness.
//
//	go run ./bench/cmd/egret-bench                 # what make bench runs
//	go run ./bench/cmd/egret-bench -quick          # about a minute
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/egret-stream/egret/bench/harness"
)

// microPackages are the packages of the micro-benchmarks (full and quick).
var (
	microPackages      = []string{"./core/tuple/", "./daemons/wire/", "./daemons/instance/...", "./daemons/stmgr/"}
	microPackagesQuick = []string{"./core/tuple/", "./daemons/wire/"}
)

type props []string

func (p *props) String() string     { return strings.Join(*p, ",") }
func (p *props) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var o harness.SuiteOptions
	var quick, noCluster, noMicro bool
	var micro string
	var extra props
	fs := flag.NewFlagSet("egret-bench", flag.ContinueOnError)
	fs.BoolVar(&quick, "quick", false, "a one-minute subset: shorter warm-up and window, fewer micro-benchmarks")
	fs.StringVar(&o.Egret, "egret", "", "prebuilt egret binary (default: build ./cmd/egret)")
	fs.StringVar(&o.Topology, "topology", "", "prebuilt constnull binary (default: build ./bench/topologies/constnull)")
	fs.BoolVar(&noCluster, "no-cluster", false, "skip the cluster benchmark")
	fs.BoolVar(&noMicro, "no-micro", false, "skip the micro-benchmarks")
	fs.StringVar(&o.Name, "name", "", "result name (default t1-constnull-<containers>c[-<spouts>s<bolts>b][-quick])")
	fs.IntVar(&o.Containers, "containers", 2, "containers of the topology (1..N; container 0 is the topology manager's)")
	fs.IntVar(&o.Spouts, "spouts", 1, "spout parallelism")
	fs.IntVar(&o.Bolts, "bolts", 1, "bolt parallelism")
	fs.DurationVar(&o.Warmup, "warmup", 0, "warm-up before each window (default 10s, quick 3s)")
	fs.DurationVar(&o.Window, "window", 0, "measurement window (default 30s, quick 10s)")
	fs.IntVar(&o.Runs, "runs", 3, "runs, each on a fresh cluster")
	fs.DurationVar(&o.MetricsInterval, "metrics-interval", time.Second, "egret.metrics.export.interval of the runs")
	fs.Var(&extra, "prop", "more config: key=value (repeatable)")
	fs.BoolVar(&o.Keep, "keep", false, "keep each run's EGRET_HOME")
	fs.IntVar(&o.ProfileSeconds, "profile", 0, "profile the stream managers and instances with perf for this many seconds after run 1")
	fs.StringVar(&micro, "micro", "", "comma-separated packages of the micro-benchmarks (default: the make bench set)")
	fs.IntVar(&o.MicroCount, "micro-count", 0, "go test -count of the micro-benchmarks (default 3, quick 1)")
	fs.StringVar(&o.MicroBenchtime, "micro-benchtime", "", "go test -benchtime of the micro-benchmarks (default go test's, quick 200ms)")
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
	o.Cluster, o.Micro, o.Props = !noCluster, !noMicro, extra
	o.MicroPackages, o.MicroName = microPackages, "micro"
	def := func(d *time.Duration, full, q time.Duration) {
		if *d == 0 {
			*d = full
			if quick {
				*d = q
			}
		}
	}
	def(&o.Warmup, 10*time.Second, 3*time.Second)
	def(&o.Window, 30*time.Second, 10*time.Second)
	if o.MicroCount == 0 {
		o.MicroCount = 3
	}
	if o.Name == "" {
		o.Name = fmt.Sprintf("t1-constnull-%dc", o.Containers)
		if o.Spouts != 1 || o.Bolts != 1 {
			o.Name += fmt.Sprintf("-%ds%db", o.Spouts, o.Bolts)
		}
	}
	if quick {
		o.MicroPackages, o.MicroName = microPackagesQuick, "micro-quick"
		o.Name += "-quick"
		if !flagSet(fs, "micro-count") {
			o.MicroCount = 1
		}
		if o.MicroBenchtime == "" {
			o.MicroBenchtime = "200ms"
		}
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

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
