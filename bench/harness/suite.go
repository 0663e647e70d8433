package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Bench is one cluster benchmark of the suite.
type Bench struct {
	// Name names the result (bench/results/<Name>.json); Group is the
	// benchmark's id in issue 7 ("T1", "T2", "T3").
	Name  string
	Group string
	// Workload is what runs; its Binary is filled from
	// SuiteOptions.Binaries by Workload.Topology when empty.
	Workload Workload
	// Runs, Warmup and Window as in ClusterOptions.
	Runs           int
	Warmup, Window time.Duration
	// Profile asks for a perf profile after the first run's window.
	Profile bool
	// RateOf and RateFraction make a fixed-rate benchmark: the offered
	// rate is RateFraction × the median sink rate of the benchmark named
	// RateOf, which must come earlier in the suite.
	RateOf       string
	RateFraction float64
}

// External is a benchmark built outside this package that the suite runs
// after its own and renders in the report: T4 (back pressure,
// bench/backpressure) and T5 (recovery, bench/recovery). Group is its id
// ("T4"); Run does the work.
type External struct {
	Group, Title string
	Run          func(ctx context.Context, env ExternalEnv) (*ExternalResult, error)
}

// ExternalEnv is what an External benchmark gets from the suite.
type ExternalEnv struct {
	// Root is the module's directory; Egret a built egret binary;
	// ResultsDir the directory for its JSON results; Quick is true under
	// make bench-quick; Out receives progress lines.
	Root, Egret, ResultsDir string
	Quick                   bool
	Out                     io.Writer
}

// ExternalResult is an External benchmark's outcome: its section of the
// report (markdown, rendered under a "### <Group>: <Title>" heading) and
// the targets it evaluated.
type ExternalResult struct {
	Markdown string   `json:"markdown"`
	Targets  []Target `json:"targets,omitempty"`
}

// SuiteOptions configure what `make bench` runs.
type SuiteOptions struct {
	// Root is the Egret module's directory (found from the working
	// directory when empty).
	Root string
	// Egret is a prebuilt egret binary; Binaries prebuilt topology
	// binaries by topology name. What is missing is built from Root
	// (Topologies gives each topology's package).
	Egret      string
	Binaries   map[string]string
	Topologies map[string]string

	// Calibrate runs the calibration first (CalibrationOptions).
	Calibrate   bool
	Calibration CalibrationOptions

	// Benchmarks are the cluster benchmarks, run in order.
	Benchmarks      []Bench
	MetricsInterval time.Duration
	Props           []string
	Keep            bool
	ProfileSeconds  int
	// FixedRate, when positive, is the offered rate of every fixed-rate
	// benchmark instead of its fraction of the maximum (to compare two
	// builds at the same load); the maximum need not be measured.
	FixedRate float64

	// Micro runs go test -bench over MicroPackages.
	Micro          bool
	MicroName      string
	MicroPackages  []string
	MicroCount     int
	MicroBenchtime string

	// External benchmarks run after the cluster benchmarks.
	External []External
	// Reserved are the groups the report keeps a place for when no
	// External provides them (group → where it is built).
	Reserved map[string]string

	// Quick marks a bench-quick run (one run each, short windows): its
	// report says so.
	Quick bool
	// SuiteName names the suite's summary (bench/results/<SuiteName>.json).
	SuiteName string

	// ResultsDir receives the JSON results (relative to Root); Report,
	// when set, is the markdown file whose generated section is rewritten
	// (relative to Root).
	ResultsDir string
	Report     string

	// Out receives progress and the markdown (default os.Stdout).
	Out io.Writer
}

// SuiteResult is the summary of a suite run (bench/results/<SuiteName>.json);
// each benchmark's full result is in its own file.
type SuiteResult struct {
	Machine     Machine           `json:"machine"`
	Quick       bool              `json:"quick"`
	Started     time.Time         `json:"started"`
	Seconds     float64           `json:"seconds"`
	Calibration *Calibration      `json:"calibration,omitempty"`
	Benchmarks  []BenchSummary    `json:"benchmarks"`
	External    map[string]string `json:"external,omitempty"`
	Targets     []Target          `json:"targets"`
}

// BenchSummary is one benchmark's headline figures in the suite summary.
type BenchSummary struct {
	Name               string  `json:"name"`
	Group              string  `json:"group"`
	Unit               string  `json:"unit"`
	PerSec             Stat    `json:"per_sec"`
	PerCPUSecond       Stat    `json:"per_cpu_second"`
	CPUSecondsPerM     Stat    `json:"cpu_seconds_per_million"`
	FractionOfTCP      float64 `json:"fraction_of_tcp_calibration,omitempty"`
	Error              string  `json:"error,omitempty"`
	ResultFile         string  `json:"result_file"`
	OfferedRate        float64 `json:"offered_rate,omitempty"`
	SinkLatencyP99Ms   float64 `json:"sink_latency_p99_ms,omitempty"`
	CompleteLatencyP99 float64 `json:"complete_latency_p99_ms,omitempty"`
}

// RunSuite runs the selected benchmarks, writes their JSON results and
// the report, and prints the report's generated section. A cluster
// benchmark that fails is recorded with its error and the suite goes on.
func RunSuite(ctx context.Context, o SuiteOptions) error {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.SuiteName == "" {
		o.SuiteName = "suite"
	}
	if o.Root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if o.Root, err = ModuleRoot(ctx, wd); err != nil {
			return err
		}
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(o.Root, p)
	}
	resultsDir := abs(o.ResultsDir)
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	started := time.Now()
	rep := Report{Quick: o.Quick, Reserved: o.Reserved}
	if o.Calibrate {
		fmt.Fprintf(o.Out, "calibration: 100-byte frames in 64 KiB writes over loopback TCP, a Unix socket and a channel\n")
		cal, err := RunCalibration(ctx, o.Calibration)
		if err != nil {
			return err
		}
		for _, t := range cal.Transports {
			fmt.Fprintf(o.Out, "calibration: %s: %.3g frames/s, %.3g MB/s, %.3g CPU-s per M frames\n", t.Name, t.FramesPerSec, t.BytesPerSec/1e6, t.CPUSecondsPerMFrames)
		}
		name := "calibration"
		if o.Quick {
			name += "-quick"
		}
		if err := writeJSON(filepath.Join(resultsDir, name+".json"), cal); err != nil {
			return err
		}
		rep.Calibration = cal
	}
	bin, cleanup, err := o.binaries(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	byName := map[string]*ClusterResult{}
	for _, b := range o.Benchmarks {
		res := o.runBench(ctx, b, bin, byName, resultsDir)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		byName[b.Name] = res
		rep.Cluster = append(rep.Cluster, res)
	}
	for _, x := range o.External {
		fmt.Fprintf(o.Out, "%s: %s\n", x.Group, x.Title)
		r, err := x.Run(ctx, ExternalEnv{Root: o.Root, Egret: bin["egret"], ResultsDir: resultsDir, Quick: o.Quick, Out: o.Out})
		if err != nil {
			r = &ExternalResult{Markdown: fmt.Sprintf("Not measured: %v\n", err)}
		}
		rep.External = append(rep.External, ExternalSection{Group: x.Group, Title: x.Title, Result: r})
	}
	if o.Micro {
		fmt.Fprintf(o.Out, "micro-benchmarks: go test -bench over %v\n", o.MicroPackages)
		m, err := RunMicro(ctx, MicroOptions{Root: o.Root, Packages: o.MicroPackages, Count: o.MicroCount, Benchtime: o.MicroBenchtime, Out: o.Out})
		if err != nil {
			return err
		}
		if err := writeJSON(filepath.Join(resultsDir, o.MicroName+".json"), m); err != nil {
			return err
		}
		rep.Micro = m
	}
	rep.Targets = rep.EvaluateTargets()
	sum := rep.summary(o.Quick, started, resultsDir, o.Root)
	if err := writeJSON(filepath.Join(resultsDir, o.SuiteName+".json"), sum); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "\n%s", md.String())
	if o.Report != "" {
		if err := Main.Update(abs(o.Report), md.String()); err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
		fmt.Fprintf(o.Out, "report written to %s\n", abs(o.Report))
	}
	fmt.Fprintf(o.Out, "suite finished in %s\n", time.Since(started).Round(time.Second))
	return nil
}

// binaries returns the egret and topology binaries by name ("egret",
// topology names), building what was not given.
func (o *SuiteOptions) binaries(ctx context.Context) (map[string]string, func(), error) {
	out := map[string]string{"egret": o.Egret}
	for k, v := range o.Binaries {
		out[k] = v
	}
	need := map[string]bool{}
	for _, b := range o.Benchmarks {
		if b.Workload.Binary == "" {
			need[b.Workload.Topology] = true
		}
	}
	noop := func() {}
	var missing []string
	if out["egret"] == "" && (len(o.Benchmarks) > 0 || len(o.External) > 0) {
		missing = append(missing, "egret")
	}
	for t := range need {
		if out[t] == "" {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return out, noop, nil
	}
	dir, err := os.MkdirTemp("", "egret-bench-bin-")
	if err != nil {
		return nil, noop, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	for _, name := range missing {
		pkg := "./cmd/egret"
		if name != "egret" {
			if pkg = o.Topologies[name]; pkg == "" {
				cleanup()
				return nil, noop, fmt.Errorf("no package is known for the topology %q: add it to SuiteOptions.Topologies", name)
			}
		}
		fmt.Fprintf(o.Out, "building %s\n", pkg)
		if out[name], err = Build(ctx, o.Root, pkg, dir, name); err != nil {
			cleanup()
			return nil, noop, err
		}
	}
	return out, cleanup, nil
}

// runBench runs one cluster benchmark; a failure becomes the result's
// Error.
func (o *SuiteOptions) runBench(ctx context.Context, b Bench, bin map[string]string, done map[string]*ClusterResult, resultsDir string) *ClusterResult {
	w := b.Workload
	if w.Binary == "" {
		w.Binary = bin[w.Topology]
	}
	fail := func(err error) *ClusterResult {
		fmt.Fprintf(o.Out, "%s: not measured: %v\n", b.Name, err)
		res := &ClusterResult{Name: b.Name, Group: b.Group, Workload: w, Machine: DescribeMachine(), Error: err.Error()}
		_ = writeJSON(filepath.Join(resultsDir, b.Name+".json"), res)
		return res
	}
	switch {
	case b.RateOf != "" && o.FixedRate > 0:
		w = w.WithRate(o.FixedRate)
	case b.RateOf != "":
		base := done[b.RateOf]
		if base == nil || base.Error != "" || base.Summary["sink_tuples_per_sec"].Median <= 0 {
			return fail(fmt.Errorf("its offered rate is %.0f%% of %s's maximum, which was not measured", 100*b.RateFraction, b.RateOf))
		}
		w = w.WithRate(b.RateFraction * base.Summary["sink_tuples_per_sec"].Median)
	}
	var prof ProfileOptions
	if b.Profile && o.ProfileSeconds > 0 {
		prof = ProfileOptions{Seconds: o.ProfileSeconds, ReportFile: filepath.Join(resultsDir, b.Name+"-perf.txt")}
	}
	res, err := RunCluster(ctx, ClusterOptions{
		Name:            b.Name,
		Egret:           bin["egret"],
		Workload:        w,
		Warmup:          b.Warmup,
		Window:          b.Window,
		Runs:            b.Runs,
		MetricsInterval: o.MetricsInterval,
		Props:           o.Props,
		Keep:            o.Keep,
		Profile:         prof,
		Log:             o.Out,
	})
	if err != nil {
		return fail(err)
	}
	res.Group = b.Group
	if res.Profile != nil && res.Profile.ReportFile != "" {
		if rel, err := filepath.Rel(o.Root, res.Profile.ReportFile); err == nil && !strings.HasPrefix(rel, "..") {
			res.Profile.ReportFile = rel
		}
	}
	if err := writeJSON(filepath.Join(resultsDir, b.Name+".json"), res); err != nil {
		fmt.Fprintf(o.Out, "%s: %v\n", b.Name, err)
	}
	return res
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// Skeleton is the text of a new docs/benchmarks.md around its generated
// section.
func Skeleton(section string) string {
	return "# Benchmarks\n\n`make bench` runs the benchmarks and rewrites the generated section below; `make bench-quick` runs a one-minute subset.\n\n" +
		section + "\n"
}
