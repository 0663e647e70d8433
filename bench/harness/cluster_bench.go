package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/egret-stream/egret/bench/topologies/latency"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/daemons/instance/gateway"
	"github.com/egret-stream/egret/daemons/stmgr"
)

// Workload is a topology to measure on a local cluster.
type Workload struct {
	// Topology is the topology's name; Binary its built binary; Args its
	// own flags (given after -- to egret submit).
	Topology string   `json:"topology"`
	Binary   string   `json:"-"`
	Args     []string `json:"args"`
	// Source is the component whose emitted counter is the offered rate;
	// Sink the component whose executed counter is the throughput (its
	// unit is Unit: "tuples", "sentences", ...).
	Source string `json:"source"`
	Sink   string `json:"sink"`
	Unit   string `json:"unit,omitempty"`
	// Description says what the workload is, for the report (e.g. "const
	// → null, shuffle grouping, acking off").
	Description string `json:"description,omitempty"`
	// Acking says the topology is at-least-once and its Source counts the
	// acks in the user counter "acked" (published as "user.acked").
	Acking bool `json:"acking,omitempty"`
	// Checkpointed says the topology is effectively-once: the run
	// records the topology manager's checkpoint figures.
	Checkpointed bool `json:"checkpointed,omitempty"`
	// Bolts are the bolt components whose executed tuples add up to the
	// tuple-hops per second (every tuple delivered to a bolt).
	Bolts []string `json:"bolts,omitempty"`
	// WantCross says every Source→Sink pair should be in different
	// containers (a note flags a packing that does otherwise).
	WantCross bool `json:"want_cross,omitempty"`
	// OfferedRate is the fixed offered rate in Unit per second (0:
	// unthrottled), given to the topology with RateFlag.
	OfferedRate float64 `json:"offered_rate,omitempty"`
	RateFlag    string  `json:"-"`
	// LatencyFlag, when set, is the topology's flag naming the directory
	// its latency recorders write to (bench/topologies/latency); every
	// fixed-rate run passes a fresh one and merges the recorders named in
	// Latency over the window (the first is the last bolt's).
	LatencyFlag string   `json:"-"`
	Latency     []string `json:"latency,omitempty"`
	// SubmitArgs are flags of egret submit (--resources DIR).
	SubmitArgs []string `json:"submit_args,omitempty"`
}

// ConstNull is T1, ConstSpoutNullBolt (bench/topologies/constnull);
// maxPending < 0 means acking off, 0 acking with the runtime's default.
func ConstNull(binary string, containers, spouts, bolts, maxPending int) Workload {
	w := Workload{
		Topology:    "constnull",
		Binary:      binary,
		Args:        []string{"--containers", strconv.Itoa(containers), "--spouts", strconv.Itoa(spouts), "--bolts", strconv.Itoa(bolts)},
		Source:      "const",
		Sink:        "null",
		Unit:        "tuples",
		Bolts:       []string{"null"},
		WantCross:   containers > 1 && spouts == 1 && bolts == 1,
		Description: "const → null, shuffle grouping, acking off",
	}
	if maxPending >= 0 {
		w.Acking = true
		w.Args = append(w.Args, "--acking", "--max-pending", strconv.Itoa(maxPending))
		w.Description = fmt.Sprintf("const → null, shuffle grouping, acking on, max pending %d", maxPending)
	}
	return w
}

// HeronWordCount is T2, Heron's word count (bench/topologies/heronwc):
// parallelism spouts and count bolts in as many containers.
func HeronWordCount(binary string, parallelism int) Workload {
	return Workload{
		Topology:    "heronwc",
		Binary:      binary,
		Args:        []string{"--parallelism", strconv.Itoa(parallelism)},
		Source:      "word",
		Sink:        "count",
		Unit:        "words",
		Bolts:       []string{"count"},
		Description: fmt.Sprintf("word → count, fields grouping on the word, 128K random 20-character words, acking off, parallelism %d, %d containers", parallelism, parallelism),
	}
}

// SentenceWordCount is T3, sentence word count (bench/topologies/
// sentencewc) with acking on and max pending 5000 in containers
// containers; rate > 0 offers that many sentences per second and records
// latencies.
func SentenceWordCount(binary string, containers int, rate float64) Workload {
	w := Workload{
		Topology:    "sentencewc",
		Binary:      binary,
		Args:        []string{"--containers", strconv.Itoa(containers), "--acking", "--max-pending", "5000"},
		Source:      "sentence",
		Sink:        "split",
		Unit:        "sentences",
		Acking:      true,
		Bolts:       []string{"split", "count"},
		RateFlag:    "--rate",
		LatencyFlag: "--latency-dir",
		Latency:     []string{"count", "sentence.complete"},
		Description: fmt.Sprintf("sentence → split (local-or-shuffle) → count (fields on the word), TVL's 5 sentences, acking on, max pending 5000, %d container(s)", containers),
	}
	return w.WithRate(rate)
}

// SentenceWordCountAtMostOnce is T3 with acking off.
func SentenceWordCountAtMostOnce(binary string, containers int, rate float64) Workload {
	w := SentenceWordCount(binary, containers, 0)
	w.Args = []string{"--containers", strconv.Itoa(containers)}
	w.Acking = false
	w.Latency = []string{"count"}
	w.Description = fmt.Sprintf("sentence → split (local-or-shuffle) → count (fields on the word), TVL's 5 sentences, acking off, %d container(s)", containers)
	return w.WithRate(rate)
}

// PerContainer is w with topology.container.mode process-per-container:
// each container's stream manager and instances in one process.
func (w Workload) PerContainer() Workload {
	w.Args = append(append([]string(nil), w.Args...), "--container-mode", "process-per-container")
	w.Description += ", process-per-container"
	return w
}

// SentenceWordCountEO is T3 under effectively-once: checkpoints every
// interval, acking off, the count bolt's counts and the spout's sequence
// in checkpointed state.
func SentenceWordCountEO(binary string, containers int, interval time.Duration, rate float64) Workload {
	w := SentenceWordCount(binary, containers, 0)
	w.Args = []string{"--containers", strconv.Itoa(containers), "--checkpoint-interval", interval.String()}
	w.Acking, w.Checkpointed = false, true
	w.Latency = []string{"count"}
	w.Description = fmt.Sprintf("sentence → split (local-or-shuffle) → count (fields on the word, counts in checkpointed state), TVL's 5 sentences, effectively-once, checkpoints every %s, %d container(s)", interval, containers)
	return w.WithRate(rate)
}

// WindowedWordCount is the windowed word count (bench/topologies/
// windowedwc, issue 15): words stamped with the wall clock, counted per
// word in 10 s tumbling event-time windows (sliding every slide when
// slide > 0) closed by in-band watermarks, acking off; rate > 0 offers
// that many words per second and records the latency from a window's
// close in the window bolt to each of its results at the report bolt.
func WindowedWordCount(binary string, containers int, slide time.Duration, rate float64) Workload {
	w := Workload{
		Topology:    "windowedwc",
		Binary:      binary,
		Args:        []string{"--containers", strconv.Itoa(containers)},
		Source:      "word",
		Sink:        "count",
		Unit:        "words",
		Bolts:       []string{"count", "report"},
		RateFlag:    "--rate",
		LatencyFlag: "--latency-dir",
		Latency:     []string{"report"},
		Description: fmt.Sprintf("word → count (10 s tumbling event-time windows, fields on the word, incremental count) → report, watermarks in-band every 200 ms, acking off, %d container(s)", containers),
	}
	if slide > 0 {
		w.Args = append(w.Args, "--slide", slide.String())
		w.Description = fmt.Sprintf("word → count (10 s windows sliding every %s, event time, fields on the word, incremental count) → report, watermarks in-band every 200 ms, acking off, %d container(s)", slide, containers)
	}
	return w.WithRate(rate)
}

// SentenceWordCountPython is T3 with the split bolt in Python (pystorm,
// bench/topologies/sentencewcpy): python is the bin directory of a
// virtualenv with pystorm (scripts/pyvenv.sh), resources the topology's
// resources directory shipped with egret submit --resources.
func SentenceWordCountPython(binary string, containers int, rate float64, python, resources string) Workload {
	w := SentenceWordCount(binary, containers, rate)
	w.Topology = "sentencewcpy"
	w.Args = append(w.Args, "--python-path", python)
	w.SubmitArgs = []string{"--resources", resources}
	w.Description = fmt.Sprintf("sentence → split in Python (pystorm multilang subprocess, local-or-shuffle) → count (fields on the word), TVL's 5 sentences, acking on, max pending 5000, %d container(s)", containers)
	return w
}

// WithRate returns the workload offering rate Unit per second (0:
// unthrottled).
func (w Workload) WithRate(rate float64) Workload {
	w.Args = append([]string(nil), w.Args...)
	w.OfferedRate = 0
	if rate > 0 && w.RateFlag != "" {
		w.OfferedRate = math.Round(rate)
		w.Args = append(w.Args, w.RateFlag, strconv.FormatFloat(w.OfferedRate, 'f', -1, 64))
	}
	return w
}

// ClusterOptions configure a cluster benchmark.
type ClusterOptions struct {
	// Name names the result (bench/results/<Name>.json).
	Name     string
	Egret    string // the egret binary
	Workload Workload
	// Warmup runs before the measurement Window; Runs is the number of
	// fresh clusters measured (each from submit to kill).
	Warmup, Window time.Duration
	Runs           int
	// MetricsInterval is egret.metrics.export.interval (default 1s): the
	// resolution of the throughput counters.
	MetricsInterval time.Duration
	// Props are more --config-property key=value overrides.
	Props []string
	// StartTimeout bounds the wait from submit until tuples reach the sink
	// (default 2m).
	StartTimeout time.Duration
	// Keep keeps each run's EGRET_HOME (its logs and metrics files).
	Keep bool
	// Profile, when its Seconds is positive, profiles the first run after
	// its window (see ProfileOptions).
	Profile ProfileOptions
	// Log receives progress lines (default io.Discard).
	Log io.Writer
}

// ClusterResult is a cluster benchmark's outcome: every run and the
// summary across runs.
type ClusterResult struct {
	Name string `json:"name"`
	// Group is the benchmark's id in issue 7 ("T1", "T2", ...); Title
	// its one-line description.
	Group    string   `json:"group,omitempty"`
	Title    string   `json:"title,omitempty"`
	Workload Workload `json:"workload"`
	Settings struct {
		WarmupSeconds   float64  `json:"warmup_seconds"`
		WindowSeconds   float64  `json:"window_seconds"`
		Runs            int      `json:"runs"`
		MetricsInterval string   `json:"metrics_interval"`
		Props           []string `json:"config_properties"`
	} `json:"settings"`
	Machine Machine     `json:"machine"`
	Runs    []RunResult `json:"runs"`
	// Summary holds Stat of each RunResult figure, by its JSON name.
	Summary map[string]Stat `json:"summary"`
	// CPUSecondsByKind and PeakRSSMiBByKind summarize the per-kind figures.
	CoresByKind      map[string]Stat `json:"cores_by_kind"`
	PeakRSSMiBByKind map[string]Stat `json:"peak_rss_mib_by_kind"`
	// Latency summarizes each recorder's percentiles over the runs, by
	// recorder name (fixed-rate workloads only).
	Latency map[string]LatencyStat `json:"latency,omitempty"`
	// Profile is the profile of the first run, when asked for.
	Profile *Profile `json:"profile,omitempty"`
	// Error, when set, says why the benchmark did not run or did not
	// finish (the suite records it and goes on); its figures are then
	// empty.
	Error string `json:"error,omitempty"`
}

// LatencyStat is a latency recorder's percentiles across runs, in
// milliseconds (each run's percentile from its merged histogram).
type LatencyStat struct {
	P50  Stat `json:"p50_ms"`
	P99  Stat `json:"p99_ms"`
	P999 Stat `json:"p99_9_ms"`
	Max  Stat `json:"max_ms"`
	// Count is the number of latencies recorded per run.
	Count Stat `json:"count"`
}

// RunResult is one measured run.
type RunResult struct {
	Run           int       `json:"run"`
	Start         time.Time `json:"window_start"`
	WindowSeconds float64   `json:"window_seconds"`
	// SinkTuplesPerSec is the sink's executed tuples per second;
	// SourceTuplesPerSec the source's emitted tuples per second.
	SinkTuplesPerSec   float64 `json:"sink_tuples_per_sec"`
	SourceTuplesPerSec float64 `json:"source_tuples_per_sec"`
	// RemoteTuplesPerSec are the tuples per second stream managers sent to
	// peer stream managers: equal to the sink rate when every tuple
	// crosses two stream managers. DeliveredTuplesPerSec are the tuples
	// per second stream managers wrote to the sink's instances. Both come
	// from the stream managers' counters, published at
	// egret.metrics.export.interval, a cross-check of the sink's rate.
	RemoteTuplesPerSec    float64 `json:"remote_tuples_per_sec"`
	DeliveredTuplesPerSec float64 `json:"delivered_tuples_per_sec"`
	// AckedPerSec are the root tuples fully acked per second (the
	// source's user counter "acked"; acking workloads only);
	// TupleHopsPerSec the tuples executed per second by all the
	// workload's bolts.
	AckedPerSec float64 `json:"acked_per_sec,omitempty"`
	// Effectively-once: checkpoints completed per second over the
	// window, and the duration (ms) and size (bytes) of the last complete
	// one at its end, from the topology manager's metrics.
	CheckpointsPerSec    float64 `json:"checkpoints_per_sec,omitempty"`
	CheckpointDurationMs float64 `json:"checkpoint_duration_ms,omitempty"`
	CheckpointBytes      float64 `json:"checkpoint_bytes,omitempty"`
	TupleHopsPerSec      float64 `json:"tuple_hops_per_sec"`
	// OfferedRate is the fixed offered rate (0: unthrottled);
	// AchievedFraction the sink's rate divided by it.
	OfferedRate      float64 `json:"offered_rate,omitempty"`
	AchievedFraction float64 `json:"achieved_fraction,omitempty"`
	// Latency is each latency recorder's distribution over the window,
	// by recorder name.
	Latency map[string]latency.Summary `json:"latency,omitempty"`
	// SinkSampleSeconds is the median interval between the sink's
	// published counters: the resolution of SinkTuplesPerSec (its
	// counters are interpolated to the window's ends).
	SinkSampleSeconds float64 `json:"sink_sample_seconds"`
	// EngineCPUSeconds is user+system time of every engine process in the
	// window; EngineCores that per second of window.
	EngineCPUSeconds     float64 `json:"engine_cpu_seconds"`
	EngineCores          float64 `json:"engine_cores"`
	CPUSecondsPerMTuples float64 `json:"cpu_seconds_per_million_tuples"`
	TuplesPerCPUSecond   float64 `json:"tuples_per_cpu_second"`
	// MachineBusyCores is the whole machine's busy time per second of
	// window (/proc/stat); OtherBusyCores what was not the engine (the
	// harness, the kernel's softirq time charged elsewhere, other work);
	// StealCores the hypervisor's steal.
	MachineBusyCores float64 `json:"machine_busy_cores"`
	OtherBusyCores   float64 `json:"other_busy_cores"`
	StealCores       float64 `json:"steal_cores"`
	// CoresByKind is EngineCores per process kind; PeakRSSByKind the
	// largest VmHWM among processes of a kind; RSSByKind the sum of VmRSS
	// of a kind averaged over the window's samples; Processes the count
	// of processes per kind.
	CoresByKind   map[string]float64 `json:"cores_by_kind"`
	PeakRSSByKind map[string]int64   `json:"peak_rss_bytes_by_kind"`
	RSSByKind     map[string]int64   `json:"rss_bytes_by_kind"`
	Processes     map[string]int     `json:"processes"`
	// TuplesLost is what the stream managers counted as lost, in total,
	// at the end of the window.
	TuplesLost float64 `json:"tuples_lost"`
	// Placement lists each container's instances (component:task) from
	// the packing plan; CrossFraction is the share of source→sink task
	// pairs in different containers (with shuffle grouping, the share of
	// tuples that cross two stream managers).
	Placement     map[string][]string `json:"placement"`
	CrossFraction float64             `json:"cross_fraction"`
	// Notes report anything that makes the run less trustworthy.
	Notes []string `json:"notes,omitempty"`
}

// summaryFigures are the RunResult figures summarized across runs.
var summaryFigures = []struct {
	name string
	get  func(*RunResult) float64
}{
	{"sink_tuples_per_sec", func(r *RunResult) float64 { return r.SinkTuplesPerSec }},
	{"source_tuples_per_sec", func(r *RunResult) float64 { return r.SourceTuplesPerSec }},
	{"remote_tuples_per_sec", func(r *RunResult) float64 { return r.RemoteTuplesPerSec }},
	{"delivered_tuples_per_sec", func(r *RunResult) float64 { return r.DeliveredTuplesPerSec }},
	{"acked_per_sec", func(r *RunResult) float64 { return r.AckedPerSec }},
	{"checkpoints_per_sec", func(r *RunResult) float64 { return r.CheckpointsPerSec }},
	{"checkpoint_duration_ms", func(r *RunResult) float64 { return r.CheckpointDurationMs }},
	{"checkpoint_bytes", func(r *RunResult) float64 { return r.CheckpointBytes }},
	{"tuple_hops_per_sec", func(r *RunResult) float64 { return r.TupleHopsPerSec }},
	{"achieved_fraction", func(r *RunResult) float64 { return r.AchievedFraction }},
	{"engine_cores", func(r *RunResult) float64 { return r.EngineCores }},
	{"cpu_seconds_per_million_tuples", func(r *RunResult) float64 { return r.CPUSecondsPerMTuples }},
	{"tuples_per_cpu_second", func(r *RunResult) float64 { return r.TuplesPerCPUSecond }},
	{"machine_busy_cores", func(r *RunResult) float64 { return r.MachineBusyCores }},
	{"other_busy_cores", func(r *RunResult) float64 { return r.OtherBusyCores }},
	{"steal_cores", func(r *RunResult) float64 { return r.StealCores }},
}

func (o *ClusterOptions) defaults() error {
	if o.Egret == "" || o.Workload.Binary == "" {
		return errors.New("cluster benchmark: the egret and topology binaries are required")
	}
	if o.Workload.Topology == "" || o.Workload.Source == "" || o.Workload.Sink == "" {
		return errors.New("cluster benchmark: the workload needs a topology, a source and a sink")
	}
	if o.Window <= 0 {
		return fmt.Errorf("cluster benchmark: the window must be positive, got %s", o.Window)
	}
	if o.Warmup < 0 {
		return fmt.Errorf("cluster benchmark: the warm-up cannot be negative, got %s", o.Warmup)
	}
	if o.Runs <= 0 {
		o.Runs = 3
	}
	if o.MetricsInterval <= 0 {
		o.MetricsInterval = time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 2 * time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

// RunCluster runs the benchmark opts.Runs times, each on a fresh local
// cluster, and summarizes the runs. A run that fails ends the benchmark
// with the error.
func RunCluster(ctx context.Context, opts ClusterOptions) (*ClusterResult, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	res := &ClusterResult{Name: opts.Name, Workload: opts.Workload, Machine: DescribeMachine()}
	res.Settings.WarmupSeconds = opts.Warmup.Seconds()
	res.Settings.WindowSeconds = opts.Window.Seconds()
	res.Settings.Runs = opts.Runs
	res.Settings.MetricsInterval = opts.MetricsInterval.String()
	res.Settings.Props = append([]string{}, opts.Props...)
	for i := 1; i <= opts.Runs; i++ {
		fmt.Fprintf(opts.Log, "%s: run %d of %d: submit %s (%v)\n", opts.Name, i, opts.Runs, opts.Workload.Topology, opts.Workload.Args)
		r, prof, err := runOnce(ctx, &opts, i)
		if err != nil {
			return nil, fmt.Errorf("%s run %d: %w", opts.Name, i, err)
		}
		if prof != nil {
			res.Profile = prof
		}
		fmt.Fprintf(opts.Log, "%s: run %d: %.0f tuples/s at the sink, %.2f engine cores, %.3f CPU-s per M tuples, %.0f tuples per CPU-s\n",
			opts.Name, i, r.SinkTuplesPerSec, r.EngineCores, r.CPUSecondsPerMTuples, r.TuplesPerCPUSecond)
		for _, n := range r.Notes {
			fmt.Fprintf(opts.Log, "%s: run %d: note: %s\n", opts.Name, i, n)
		}
		res.Runs = append(res.Runs, *r)
	}
	res.summarize()
	return res, nil
}

func (res *ClusterResult) summarize() {
	res.Summary = map[string]Stat{}
	for _, f := range summaryFigures {
		xs := make([]float64, len(res.Runs))
		for i := range res.Runs {
			xs[i] = f.get(&res.Runs[i])
		}
		res.Summary[f.name] = Summarize(xs)
	}
	cores, rss := map[string][]float64{}, map[string][]float64{}
	for _, r := range res.Runs {
		for k, v := range r.CoresByKind {
			cores[k] = append(cores[k], v)
		}
		for k, v := range r.PeakRSSByKind {
			rss[k] = append(rss[k], float64(v)/(1<<20))
		}
	}
	lat := map[string][5][]float64{}
	for _, r := range res.Runs {
		for name, l := range r.Latency {
			v := lat[name]
			for i, x := range []float64{l.P50, l.P99, l.P999, l.Max, float64(l.Count)} {
				v[i] = append(v[i], x)
			}
			lat[name] = v
		}
	}
	if len(lat) > 0 {
		res.Latency = map[string]LatencyStat{}
		for name, v := range lat {
			res.Latency[name] = LatencyStat{P50: Summarize(v[0]), P99: Summarize(v[1]), P999: Summarize(v[2]), Max: Summarize(v[3]), Count: Summarize(v[4])}
		}
	}
	res.CoresByKind, res.PeakRSSMiBByKind = map[string]Stat{}, map[string]Stat{}
	for k, xs := range cores {
		res.CoresByKind[k] = Summarize(xs)
	}
	for k, xs := range rss {
		res.PeakRSSMiBByKind[k] = Summarize(xs)
	}
}

// snapshot is the engine's processes at one instant.
type snapshot struct {
	at      time.Time
	procs   map[int]ProcStat
	kinds   map[int]string
	machine MachineCPU
}

func (s *snapshot) kind(pid int) string {
	if k, ok := s.kinds[pid]; ok {
		return k
	}
	return "other"
}

func takeSnapshot(c *LocalCluster, topology string, sched int) (*snapshot, error) {
	kinds, err := c.ProcessKinds(topology)
	if err != nil {
		return nil, err
	}
	m0, err := readMachineCPU("/proc")
	if err != nil {
		return nil, err
	}
	before := time.Now()
	procs, err := descendants("/proc", sched)
	if err != nil {
		return nil, err
	}
	after := time.Now()
	m1, err := readMachineCPU("/proc")
	if err != nil {
		return nil, err
	}
	if _, ok := procs[sched]; !ok {
		return nil, fmt.Errorf("the scheduler service (pid %d) is gone", sched)
	}
	return &snapshot{
		at:      before.Add(after.Sub(before) / 2),
		procs:   procs,
		kinds:   kinds,
		machine: MachineCPU{Busy: (m0.Busy + m1.Busy) / 2, Idle: (m0.Idle + m1.Idle) / 2, Steal: (m0.Steal + m1.Steal) / 2},
	}, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// runOnce submits the workload to a fresh cluster, measures it and kills
// it.
func runOnce(ctx context.Context, o *ClusterOptions, run int) (res *RunResult, prof *Profile, err error) {
	props := append([]string{"egret.metrics.export.interval=" + o.MetricsInterval.String()}, o.Props...)
	c, err := NewLocalCluster(o.Egret, props)
	if err != nil {
		return nil, nil, err
	}
	w := o.Workload
	var pids []int
	defer func() {
		// Clean up even when ctx was cancelled (Ctrl-C).
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if o.Keep || err != nil {
			if serr := c.saveWorkDir(w.Topology, filepath.Join(c.home, "saved", w.Topology)); serr != nil {
				fmt.Fprintf(o.Log, "%s: run %d: saving the working directory: %v\n", o.Name, run, serr)
			}
		}
		if kerr := c.Kill(kctx, w.Topology, pids); kerr != nil {
			err = errors.Join(err, fmt.Errorf("kill: %w", kerr))
		}
		if o.Keep || err != nil {
			fmt.Fprintf(o.Log, "%s: run %d: EGRET_HOME kept: %s (working directory copied to saved/%s)\n", o.Name, run, c.home, w.Topology)
			return
		}
		if rerr := c.Remove(); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	args := append(append(append([]string{"submit"}, w.SubmitArgs...), ClusterName, w.Binary, "--"), w.Args...)
	latencyDir := ""
	if w.LatencyFlag != "" && len(w.Latency) > 0 && w.OfferedRate > 0 {
		latencyDir = filepath.Join(c.home, "latency")
		if err := os.MkdirAll(latencyDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("latency directory: %w", err)
		}
		args = append(args, w.LatencyFlag, latencyDir)
	}
	if _, err := c.CLI(ctx, args...); err != nil {
		return nil, nil, err
	}
	sched, err := c.SchedulerPID(w.Topology)
	if err != nil {
		return nil, nil, err
	}
	pids = append(pids, sched)
	pp, err := c.packingPlan(ctx, w.Topology)
	if err != nil {
		return nil, nil, err
	}
	res = &RunResult{Run: run, OfferedRate: w.OfferedRate}
	res.Placement, res.CrossFraction = placement(pp, w.Source, w.Sink)
	if w.WantCross && res.CrossFraction < 1 {
		res.Notes = append(res.Notes, fmt.Sprintf("only %.0f%% of %s→%s task pairs are in different containers", 100*res.CrossFraction, w.Source, w.Sink))
	}
	sinks, sources := tasksOf(pp, w.Sink), tasksOf(pp, w.Source)
	if len(sinks) == 0 || len(sources) == 0 {
		return nil, nil, fmt.Errorf("the packing plan has no %s or no %s task", w.Source, w.Sink)
	}

	// Wait for tuples at every sink task.
	fmt.Fprintf(o.Log, "%s: run %d: waiting for tuples at %s\n", o.Name, run, w.Sink)
	deadline := time.Now().Add(o.StartTimeout)
	for {
		ok, err := c.flowing(w, sinks)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("no tuple reached every %s task within %s; see the logs under %s", w.Sink, o.StartTimeout, c.WorkDir(w.Topology))
		}
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return nil, nil, err
		}
	}
	fmt.Fprintf(o.Log, "%s: run %d: warming up for %s, then measuring for about %s\n", o.Name, run, o.Warmup, o.Window)
	if err := sleepCtx(ctx, o.Warmup); err != nil {
		return nil, nil, err
	}

	// The window starts and ends when the first sink task publishes its
	// counters, so that its executed counter is read exactly at the
	// window's ends; it lasts a whole number of its publishing intervals.
	sink := sinks[0]
	tail := &tailer{path: filepath.Join(c.WorkDir(w.Topology), "container-"+strconv.Itoa(containerOfTask(pp)[sink]), "metrics.jsonl"), task: sink, metric: gateway.MetricExecuted}
	if err := tail.poll(); err != nil {
		return nil, nil, err
	}
	first, err := tail.next(ctx, time.Now(), time.Now().Add(2*max(o.MetricsInterval, 10*time.Second)+10*time.Second))
	if err != nil {
		return nil, nil, err
	}
	start, err := takeSnapshot(c, w.Topology, sched)
	if err != nil {
		return nil, nil, err
	}
	for pid := range start.procs {
		pids = append(pids, pid)
	}
	interval := tail.interval(o.MetricsInterval)
	periods := max(1, int(math.Round(float64(o.Window)/float64(interval))))
	target := first.At.Add(time.Duration(periods) * interval)
	// Sample RSS every second through the window.
	rssSum := map[string]int64{}
	samples := 0
	for {
		d := time.Until(target) - 200*time.Millisecond
		if d <= 0 {
			break
		}
		if err := sleepCtx(ctx, min(d, time.Second)); err != nil {
			return nil, nil, err
		}
		procs, err := descendants("/proc", sched)
		if err != nil {
			return nil, nil, err
		}
		samples++
		for pid, p := range procs {
			rssSum[start.kind(pid)] += p.RSSBytes
		}
	}
	last, err := tail.next(ctx, target.Add(-interval/2), target.Add(interval+10*time.Second))
	if err != nil {
		return nil, nil, err
	}
	stop, err := takeSnapshot(c, w.Topology, sched)
	if err != nil {
		return nil, nil, err
	}
	for pid := range stop.procs {
		pids = append(pids, pid)
	}
	res.Start = start.at.UTC()
	res.WindowSeconds = stop.at.Sub(start.at).Seconds()
	res.accountCPU(start, stop)
	res.RSSByKind = map[string]int64{}
	for k, v := range rssSum {
		res.RSSByKind[k] = v / int64(max(samples, 1))
	}

	// The counters: wait for a report after the window from every task.
	if err := c.counters(ctx, o, w, res, first.At, last.At, pp, sources, sinks, containerOfTask(pp)); err != nil {
		return nil, nil, err
	}
	if res.OfferedRate > 0 {
		res.AchievedFraction = res.SinkTuplesPerSec / res.OfferedRate
	}
	for _, name := range w.Latency {
		if latencyDir == "" {
			break
		}
		l, found, err := latency.Merge(latencyDir, name, first.At, last.At)
		if err != nil {
			return nil, nil, fmt.Errorf("latency %s: %w", name, err)
		}
		if !found {
			res.Notes = append(res.Notes, fmt.Sprintf("no %s latency was recorded in the window", name))
			continue
		}
		if res.Latency == nil {
			res.Latency = map[string]latency.Summary{}
		}
		res.Latency[name] = l
	}
	if res.SinkTuplesPerSec > 0 {
		res.CPUSecondsPerMTuples = res.EngineCPUSeconds / (res.SinkTuplesPerSec * res.WindowSeconds / 1e6)
		res.TuplesPerCPUSecond = res.SinkTuplesPerSec * res.WindowSeconds / res.EngineCPUSeconds
	}
	if run == 1 && o.Profile.Seconds > 0 {
		fmt.Fprintf(o.Log, "%s: run %d: profiling for %ds\n", o.Name, run, o.Profile.Seconds)
		prof, err = profile(ctx, o.Profile, stop)
		if err != nil {
			res.Notes = append(res.Notes, "profile: "+err.Error())
			prof, err = nil, nil
		}
	}
	return res, prof, nil
}

// accountCPU fills the CPU and memory figures from two snapshots.
func (r *RunResult) accountCPU(start, stop *snapshot) {
	r.CoresByKind = map[string]float64{}
	r.PeakRSSByKind = map[string]int64{}
	r.Processes = map[string]int{}
	secs := r.WindowSeconds
	var restarted []string
	for pid, p := range stop.procs {
		kind := stop.kind(pid)
		cpu := p.CPUSeconds
		if s, ok := start.procs[pid]; ok {
			cpu -= s.CPUSeconds
		} else {
			restarted = append(restarted, fmt.Sprintf("%s %d", kind, pid))
		}
		r.EngineCPUSeconds += cpu
		r.CoresByKind[kind] += cpu / secs
		r.Processes[kind]++
		r.PeakRSSByKind[kind] = max(r.PeakRSSByKind[kind], p.PeakRSSBytes)
	}
	var gone []string
	for pid := range start.procs {
		if _, ok := stop.procs[pid]; !ok {
			gone = append(gone, fmt.Sprintf("%s %d", start.kind(pid), pid))
		}
	}
	sort.Strings(restarted)
	sort.Strings(gone)
	if len(restarted) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("processes started during the window (counted from their start): %v", restarted))
	}
	if len(gone) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("processes that exited during the window (their CPU is missing): %v", gone))
	}
	if n := r.Processes["other"]; n > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d engine processes were not in any pids.json (kind other)", n))
	}
	r.EngineCores = r.EngineCPUSeconds / secs
	r.MachineBusyCores = (stop.machine.Busy - start.machine.Busy) / secs
	r.StealCores = (stop.machine.Steal - start.machine.Steal) / secs
	r.OtherBusyCores = r.MachineBusyCores - r.EngineCores
}

// placement lists each container's instances and the share of
// source→sink task pairs placed in different containers.
func placement(pp *plan.PackingPlan, source, sink string) (map[string][]string, float64) {
	out := map[string][]string{}
	where := map[int]int{}
	for _, c := range pp.Containers {
		key := "container-" + strconv.Itoa(c.ID)
		for _, in := range c.Instances {
			out[key] = append(out[key], in.Component+":"+strconv.Itoa(in.TaskID))
			where[in.TaskID] = c.ID
		}
		sort.Strings(out[key])
	}
	src, dst := tasksOf(pp, source), tasksOf(pp, sink)
	if len(src) == 0 || len(dst) == 0 {
		return out, math.NaN()
	}
	cross := 0
	for _, s := range src {
		for _, d := range dst {
			if where[s] != where[d] {
				cross++
			}
		}
	}
	return out, float64(cross) / float64(len(src)*len(dst))
}

// containerOfTask maps every task to its container.
func containerOfTask(pp *plan.PackingPlan) map[int]int {
	out := map[int]int{}
	for _, c := range pp.Containers {
		for _, in := range c.Instances {
			out[in.TaskID] = c.ID
		}
	}
	return out
}

// tasksOf returns a component's task ids, ascending.
func tasksOf(pp *plan.PackingPlan, component string) []int {
	var out []int
	for _, c := range pp.Containers {
		for _, in := range c.Instances {
			if in.Component == component {
				out = append(out, in.TaskID)
			}
		}
	}
	sort.Ints(out)
	return out
}

// series merges one metric of src from every container's metrics file.
func (c *LocalCluster) series(topology string, src Source, metric string) (map[int]Series, error) {
	dirs, err := c.containerDirs(topology)
	if err != nil {
		return nil, err
	}
	out := map[int]Series{}
	for _, dir := range dirs {
		s, err := ReadSeries(filepath.Join(dir, "metrics.jsonl"), src, metric)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		for k, v := range s {
			out[k] = append(out[k], v...)
		}
	}
	return out, nil
}

// flowing reports whether every sink task has executed a tuple.
func (c *LocalCluster) flowing(w Workload, sinks []int) (bool, error) {
	s, err := c.series(w.Topology, Source{Kind: "instance", Component: w.Sink}, gateway.MetricExecuted)
	if err != nil {
		return false, err
	}
	for _, t := range sinks {
		last, ok := s[t].Last()
		if !ok || last.Value <= 0 {
			return false, nil
		}
	}
	return true, nil
}

// counters fills the throughput figures: each counter interpolated at the
// window's start and end, after waiting for a report past the end.
func (c *LocalCluster) counters(ctx context.Context, o *ClusterOptions, w Workload, r *RunResult, t0, t1 time.Time, pp *plan.PackingPlan, sources, sinks []int, containerOf map[int]int) error {
	dirs, err := c.containerDirs(w.Topology)
	if err != nil {
		return err
	}
	var stmgrs []int
	for id := range dirs {
		if id > 0 {
			stmgrs = append(stmgrs, id)
		}
	}
	sort.Ints(stmgrs)
	type counter struct {
		src    Source
		metric string
		keys   []int
		// rate: the increase per second over the window; else the
		// value at its end.
		rate bool
		dst  *float64
		// optional counters are left at 0 when a process does not
		// publish them.
		optional bool
	}
	counters := []counter{
		{Source{Kind: "instance", Component: w.Sink}, gateway.MetricExecuted, sinks, true, &r.SinkTuplesPerSec, false},
		{Source{Kind: "instance", Component: w.Source}, gateway.MetricEmitted, sources, true, &r.SourceTuplesPerSec, false},
		{Source{Kind: "stmgr"}, stmgr.MetricTuplesToPeers, stmgrs, true, &r.RemoteTuplesPerSec, false},
		{Source{Kind: "stmgr"}, stmgr.MetricTuplesLost, stmgrs, false, &r.TuplesLost, false},
	}
	if w.Acking {
		counters = append(counters, counter{src: Source{Kind: "instance", Component: w.Source}, metric: "user.acked", keys: sources, rate: true, dst: &r.AckedPerSec, optional: true})
	}
	for _, b := range w.Bolts {
		counters = append(counters, counter{Source{Kind: "instance", Component: b}, gateway.MetricExecuted, tasksOf(pp, b), true, &r.TupleHopsPerSec, false})
	}
	if w.Checkpointed {
		tm := Source{Kind: "tmanager"}
		counters = append(counters,
			counter{tm, "checkpoint.completed", []int{0}, true, &r.CheckpointsPerSec, true},
			counter{tm, "checkpoint.last.duration.ms", []int{0}, false, &r.CheckpointDurationMs, true},
			counter{tm, "checkpoint.last.size.bytes", []int{0}, false, &r.CheckpointBytes, true})
	}
	// The stream managers' per-instance counters of each sink task.
	var delivered float64
	for _, t := range sinks {
		counters = append(counters, counter{Source{Kind: "stmgr"}, fmt.Sprintf("stmgr.instance.%d.tuples.out", t), []int{containerOf[t]}, true, &delivered, false})
	}
	// Instances publish at their own interval (10 s unless configured):
	// wait long enough for their next report.
	deadline := time.Now().Add(3*max(o.MetricsInterval, 10*time.Second) + 5*time.Second)
	for _, ct := range counters {
		for {
			s, err := c.series(w.Topology, ct.src, ct.metric)
			if err != nil {
				return err
			}
			var total float64
			missing := -1
			for _, k := range ct.keys {
				if ct.rate {
					v, ok := s[k].rate(t0, t1)
					if !ok {
						missing = k
						break
					}
					total += v
					continue
				}
				b, err := s[k].At(t1)
				if err != nil {
					missing = k
					break
				}
				total += b
			}
			if missing < 0 {
				*ct.dst += total
				break
			}
			if ct.optional && time.Now().After(deadline.Add(-2*max(o.MetricsInterval, 10*time.Second))) {
				r.Notes = append(r.Notes, fmt.Sprintf("%s %s %d published no %s around the window", ct.src.Kind, ct.src.Component, missing, ct.metric))
				break
			}
			if time.Now().After(deadline) {
				what := "task"
				if ct.src.Kind != "instance" {
					what = "container"
				}
				return fmt.Errorf("no %s report of %s %s %d brackets the window [%s, %s]; see the metrics files under %s",
					ct.metric, ct.src.Kind, what, missing, t0.Format(time.RFC3339Nano), t1.Format(time.RFC3339Nano), c.WorkDir(w.Topology))
			}
			if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
				return err
			}
		}
	}
	r.DeliveredTuplesPerSec = delivered
	if s, err := c.series(w.Topology, Source{Kind: "instance", Component: w.Sink}, gateway.MetricExecuted); err == nil {
		var gaps []float64
		for _, t := range sinks {
			for i := 1; i < len(s[t]); i++ {
				gaps = append(gaps, s[t][i].At.Sub(s[t][i-1].At).Seconds())
			}
		}
		r.SinkSampleSeconds = Summarize(gaps).Median
		if r.SinkSampleSeconds > 1.5*o.MetricsInterval.Seconds() {
			r.Notes = append(r.Notes, fmt.Sprintf("the %s instances published their counters every %.3g s, not every %s: the bolt rate is interpolated between reports that far apart",
				w.Sink, r.SinkSampleSeconds, o.MetricsInterval))
		}
	}
	return nil
}
