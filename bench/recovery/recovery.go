package recovery

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/bench/harness"
	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
)

// Fault kinds, in the order a run injects them.
const (
	FaultBolt       = "bolt-instance"  // one relay bolt instance
	FaultSpout      = "spout-instance" // one spout instance
	FaultStmgr      = "stmgr"          // the stream manager of a spout's container (its ledger)
	FaultMetricsMgr = "metricsmgr"     // the metrics manager of that container
	FaultTManager   = "tmanager"       // the topology manager (container 0)
	FaultContainer  = "container"      // every process of a spout's container, executor included
)

// AllFaults lists every fault kind.
var AllFaults = []string{FaultBolt, FaultSpout, FaultStmgr, FaultMetricsMgr, FaultTManager, FaultContainer}

// victimContainer holds a spout task, a relay task, a stream manager with
// a ledger and a metrics manager (the packing spreads every component of
// ackcheck over both containers).
const victimContainer = 1

// Spout parallelism of the topology (ackcheck's default): the cursors and
// acked logs are per spout task index.
const spouts = 2

// Options configure a run.
type Options struct {
	// Egret and Topology are prebuilt binaries; empty ones are built from
	// the module at Root (./cmd/egret and ./bench/topologies/ackcheck).
	Egret, Topology, Root string
	// Rate is the topology's rate in messages per second; 0 measures the
	// maximum first and runs at Fraction of it.
	Rate int
	// Fraction of the maximum (default 0.5).
	Fraction float64
	// Faults to inject (default AllFaults).
	Faults []string
	// MaxWindow is the window of the maximum-throughput measurement,
	// after as long a warm-up (default 5s, quick 2s).
	MaxWindow time.Duration
	// Baseline is the window before each kill whose sink rate is the
	// reference (default 5s, quick 2s).
	Baseline time.Duration
	// RateWindow is the window of the sink rate after a kill (default
	// 500ms); Hold is how long the rate must stay at or above
	// (1-Tolerance) of the baseline for the topology to count as recovered
	// (default 2s, quick 1s).
	RateWindow, Hold time.Duration
	// Tolerance (default 0.10).
	Tolerance float64
	// MessageTimeout of the topology (default 10s, quick 3s).
	MessageTimeout time.Duration
	// Limit bounds the wait for recovery after each kill (default 90s,
	// quick 30s).
	Limit time.Duration
	// Props are more cluster config properties (key=value).
	Props []string
	// Keep keeps the EGRET_HOME (logs, state directory).
	Keep bool
	// Quick shortens every window so that a run takes under ~2 minutes.
	Quick bool
	// Log receives progress (default: none).
	Log *zap.Logger
}

func (o *Options) defaults() {
	def := func(d *time.Duration, full, quick time.Duration) {
		if *d == 0 {
			*d = full
			if o.Quick {
				*d = quick
			}
		}
	}
	def(&o.MaxWindow, 5*time.Second, 2*time.Second)
	def(&o.Baseline, 5*time.Second, 2*time.Second)
	def(&o.RateWindow, 500*time.Millisecond, 500*time.Millisecond)
	def(&o.Hold, 2*time.Second, time.Second)
	def(&o.MessageTimeout, 10*time.Second, 3*time.Second)
	def(&o.Limit, 90*time.Second, 30*time.Second)
	if o.Fraction == 0 {
		o.Fraction = 0.5
	}
	if o.Tolerance == 0 {
		o.Tolerance = 0.10
	}
	if len(o.Faults) == 0 {
		o.Faults = AllFaults
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
}

func (o *Options) check() error {
	known := map[string]bool{}
	for _, f := range AllFaults {
		known[f] = true
	}
	for _, f := range o.Faults {
		if !known[f] {
			return fmt.Errorf("unknown fault %q (known: %s)", f, strings.Join(AllFaults, ", "))
		}
	}
	switch {
	case o.Rate < 0:
		return fmt.Errorf("rate %d: must be ≥ 0 (0: measure the maximum)", o.Rate)
	case o.Fraction <= 0 || o.Fraction > 1:
		return fmt.Errorf("fraction %v: must be in (0, 1]", o.Fraction)
	case o.Tolerance <= 0 || o.Tolerance >= 1:
		return fmt.Errorf("tolerance %v: must be in (0, 1)", o.Tolerance)
	case o.RateWindow <= 0 || o.Hold < 0 || o.Baseline < o.RateWindow:
		return fmt.Errorf("windows: rate window %s must be positive and at most the baseline %s", o.RateWindow, o.Baseline)
	}
	return nil
}

// Result is a run's figures.
type Result struct {
	Machine harness.Machine `json:"machine"`
	Quick   bool            `json:"quick"`
	// MaxRate is the measured maximum in messages (roots) per second, 0
	// when the rate was given.
	MaxRate float64 `json:"max_messages_per_sec,omitempty"`
	// Rate is the topology's rate limit in messages per second.
	Rate           int     `json:"rate_messages_per_sec"`
	Copies         int     `json:"copies"`
	MessageTimeout string  `json:"message_timeout"`
	RateWindow     string  `json:"rate_window"`
	Hold           string  `json:"hold"`
	Tolerance      float64 `json:"tolerance"`
	Faults         []Fault `json:"faults"`
	Started        string  `json:"started"`
	Seconds        float64 `json:"seconds"`
}

// Fault is the outcome of one kill.
type Fault struct {
	Kind string `json:"kind"`
	// Killed names the processes killed and their container.
	Killed    []string `json:"killed"`
	Container int      `json:"container"`
	// BaselineRate is the sink rate (tuples/s) over the baseline window
	// before the kill.
	BaselineRate float64 `json:"baseline_sink_tuples_per_sec"`
	// MinRate is the lowest windowed sink rate after the kill.
	MinRate float64 `json:"min_sink_tuples_per_sec"`
	// Recovered says whether the sink rate came back to at least
	// (1-tolerance) of the baseline (and held) before the limit; RecoverySeconds is the time from the
	// kill until the end of the first window of that stretch.
	Recovered       bool    `json:"recovered"`
	RecoverySeconds float64 `json:"recovery_seconds"`
	// Complete says whether every message emitted before the kill was
	// acked before the limit; CompleteSeconds is when.
	Complete        bool    `json:"complete"`
	CompleteSeconds float64 `json:"complete_seconds"`
	// ReplayedRoots counts emits of message ids emitted before, from the
	// kill until the topology recovered and completed.
	ReplayedRoots int64 `json:"replayed_roots"`
	// Error, when set, says why the fault could not be measured.
	Error string `json:"error,omitempty"`
}

// Run builds what is missing, starts a local cluster, measures the maximum
// (unless a rate is given), then injects each fault in turn into one
// rate-limited topology.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.defaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	began := time.Now()
	res := &Result{Machine: harness.DescribeMachine(), Quick: o.Quick, Copies: 3, MessageTimeout: o.MessageTimeout.String(),
		RateWindow: o.RateWindow.String(), Hold: o.Hold.String(), Tolerance: o.Tolerance, Started: began.UTC().Format(time.RFC3339)}
	bin, err := o.build(ctx)
	if err != nil {
		return nil, err
	}
	if bin != "" {
		defer os.RemoveAll(bin)
	}
	c, err := newCluster(o.Egret, o.Props)
	if err != nil {
		return nil, err
	}
	defer func() {
		if o.Keep {
			o.Log.Info("EGRET_HOME kept", zap.String("home", c.Home()))
			return
		}
		if err := c.Remove(); err != nil {
			o.Log.Warn("remove EGRET_HOME", zap.Error(err))
		}
	}()

	res.Rate = o.Rate
	if res.Rate == 0 {
		top, err := measureMax(ctx, c, &o)
		if err != nil {
			return nil, err
		}
		res.MaxRate = top
		res.Rate = max(1, int(top*o.Fraction))
		o.Log.Info("maximum measured", zap.Float64("messages_per_sec", top), zap.Int("rate", res.Rate))
	}

	r, err := startTopology(ctx, c, &o, "recovery", res.Rate, o.MessageTimeout)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := c.kill(context.WithoutCancel(ctx), r.name); err != nil {
			o.Log.Warn("kill the topology", zap.Error(err))
		}
	}()
	if err := r.waitFlow(ctx, time.Minute); err != nil {
		return nil, err
	}
	if res.Faults, err = injectAll(ctx, &o, r.inject); err != nil {
		return nil, err
	}
	res.Seconds = time.Since(began).Seconds()
	return res, nil
}

// injectAll injects each fault of o in turn. A fault that cannot be
// measured is recorded and the others go on; only ctx ending stops them.
func injectAll(ctx context.Context, o *Options, inject func(context.Context, string) (Fault, error)) ([]Fault, error) {
	var out []Fault
	for _, kind := range o.Faults {
		f, err := inject(ctx, kind)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			f.Error = err.Error()
			o.Log.Warn("fault not measured", zap.String("fault", kind), zap.Error(err))
		}
		out = append(out, f)
	}
	return out, nil
}

// build builds the missing binaries into a new directory, which it
// returns ("" when nothing was built); the caller removes it.
func (o *Options) build(ctx context.Context) (string, error) {
	if o.Egret != "" && o.Topology != "" {
		return "", nil
	}
	root := o.Root
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		if root, err = harness.ModuleRoot(ctx, wd); err != nil {
			return "", err
		}
	}
	dir, err := os.MkdirTemp("", "egret-recovery-bin-")
	if err != nil {
		return "", err
	}
	if o.Egret == "" {
		o.Log.Info("building egret")
		if o.Egret, err = harness.Build(ctx, root, "./cmd/egret", dir, "egret"); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	if o.Topology == "" {
		o.Log.Info("building the ackcheck topology")
		if o.Topology, err = harness.Build(ctx, root, "./bench/topologies/ackcheck", dir, "ackcheck"); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

// run is one ackcheck topology on the cluster.
type run struct {
	c       *cluster
	o       *Options
	name    string
	state   string
	sink    *lineCounter
	replays *lineCounter
	acks    *ackTracker
	// samples of the sink's record count, polled every pollEvery.
	samples harness.Series
	// sampler, when set, replaces the sink records as what is sampled
	// (effectively-once: the words counted in state).
	sampler func() (float64, error)
}

// pollEvery is the sampling interval of the state files.
const pollEvery = 50 * time.Millisecond

func startTopology(ctx context.Context, c *cluster, o *Options, name string, rate int, timeout time.Duration) (*run, error) {
	state := filepath.Join(c.Home(), "state-"+name)
	args := []string{"submit", harness.ClusterName, o.Topology, "--", "--name", name, "--messages", "0", "--state", state,
		"--rate", strconv.Itoa(rate), "--timeout", timeout.String(), "--containers", "2"}
	o.Log.Info("submitting", zap.String("topology", name), zap.Int("rate", rate))
	if _, err := c.CLI(ctx, args...); err != nil {
		return nil, err
	}
	c.remember(name, 2)
	return &run{c: c, o: o, name: name, state: state,
		sink:    newLineCounter(state, ackcheck.SinkGlob),
		replays: newLineCounter(state, ackcheck.ReplaysGlob),
		acks:    newAckTracker(state, spouts)}, nil
}

// sample polls the sink records and the acked logs once.
func (r *run) sample() error {
	if r.sampler != nil {
		v, err := r.sampler()
		if err != nil {
			return err
		}
		r.samples = append(r.samples, harness.Sample{At: time.Now(), Value: v})
		return nil
	}
	n, err := r.sink.count()
	if err != nil {
		return err
	}
	r.samples = append(r.samples, harness.Sample{At: time.Now(), Value: float64(n)})
	return r.acks.poll()
}

// sampleFor samples for d (or until ctx ends).
func (r *run) sampleFor(ctx context.Context, d time.Duration, until func() bool) error {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if err := r.sample(); err != nil {
			return err
		}
		if until != nil && until() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
	return nil
}

// waitFlow waits until the sinks record tuples.
func (r *run) waitFlow(ctx context.Context, limit time.Duration) error {
	flowing := func() bool { last, ok := r.samples.Last(); return ok && last.Value > 0 }
	if err := r.sampleFor(ctx, limit, flowing); err != nil {
		return err
	}
	if !flowing() {
		return fmt.Errorf("topology %s: no tuple reached the sinks within %s (logs under %s)", r.name, limit, r.c.WorkDir(r.name))
	}
	r.c.remember(r.name, 2)
	return nil
}

// waitSteady samples for at least a baseline window and until the sink
// rates of its two halves differ by at most half the tolerance (or the
// limit passes): the baseline before a kill is not a ramp.
func (r *run) waitSteady(ctx context.Context) error {
	began := time.Now()
	half := r.o.Baseline / 2
	steady := func() bool {
		last, ok := r.samples.Last()
		if !ok || last.At.Sub(began) < r.o.Baseline {
			return false
		}
		a, errA := r.rate(last.At.Add(-2*half), last.At.Add(-half))
		b, errB := r.rate(last.At.Add(-half), last.At)
		if errA != nil || errB != nil || a <= 0 || b <= 0 {
			return false
		}
		return math.Abs(a-b) <= r.o.Tolerance/2*math.Max(a, b)
	}
	if err := r.sampleFor(ctx, r.o.Limit, steady); err != nil {
		return err
	}
	if !steady() {
		r.o.Log.Warn("the sink rate did not settle before the kill; the baseline may be off", zap.Duration("waited", time.Since(began)))
	}
	return nil
}

// rate is the sink rate (tuples/s) over [t0, t1].
func (r *run) rate(t0, t1 time.Time) (float64, error) {
	a, err := r.samples.At(t0)
	if err != nil {
		return 0, err
	}
	b, err := r.samples.At(t1)
	if err != nil {
		return 0, err
	}
	return (b - a) / t1.Sub(t0).Seconds(), nil
}

// measureMax runs an unthrottled topology and returns its rate in
// messages per second (sink tuples / copies).
func measureMax(ctx context.Context, c *cluster, o *Options) (float64, error) {
	r, err := startTopology(ctx, c, o, "maximum", 0, 30*time.Second)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err := c.kill(context.WithoutCancel(ctx), r.name); err != nil {
			o.Log.Warn("kill the maximum-throughput topology", zap.Error(err))
		}
	}()
	if err := r.waitFlow(ctx, time.Minute); err != nil {
		return 0, err
	}
	if err := r.sampleFor(ctx, 2*o.MaxWindow, nil); err != nil {
		return 0, err
	}
	end, _ := r.samples.Last()
	tuples, err := r.rate(end.At.Add(-o.MaxWindow), end.At)
	if err != nil {
		return 0, fmt.Errorf("maximum throughput: %w", err)
	}
	return tuples / 3, nil
}

// inject measures the baseline, kills the processes of one fault kind and
// follows the recovery.
func (r *run) inject(ctx context.Context, kind string) (Fault, error) {
	f := Fault{Kind: kind}
	log := r.o.Log.With(zap.String("fault", kind))
	if err := r.waitSteady(ctx); err != nil {
		return f, err
	}
	container, pids, err := r.victims(kind)
	if err != nil {
		return f, err
	}
	f.Container = container
	for name := range pids {
		f.Killed = append(f.Killed, name)
	}
	sort.Strings(f.Killed)
	if err := r.sample(); err != nil {
		return f, err
	}
	cur, err := cursors(r.state, spouts)
	if err != nil {
		return f, err
	}
	replays0, err := r.replays.count()
	if err != nil {
		return f, err
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return f, fmt.Errorf("kill -9 %s (pid %d): %w", name, pid, err)
		}
	}
	killed := time.Now()
	// The baseline ends at the last sample before the kill.
	pre, _ := r.samples.Last()
	if f.BaselineRate, err = r.rate(pre.At.Add(-r.o.Baseline), pre.At); err != nil {
		return f, fmt.Errorf("baseline rate: %w", err)
	}
	log.Info("killed", zap.Strings("processes", f.Killed), zap.Int("container", container), zap.Float64("baseline_tuples_per_sec", f.BaselineRate))

	var rec recovery
	done := func() bool {
		rec = recoveryOf(r.samples, killed, f.BaselineRate, r.o.RateWindow, r.o.Hold, r.o.Tolerance)
		if !f.Complete && r.acks.covers(cur) {
			f.Complete, f.CompleteSeconds = true, time.Since(killed).Seconds()
		}
		return rec.ok && f.Complete
	}
	if err := r.sampleFor(ctx, r.o.Limit, done); err != nil {
		return f, err
	}
	done()
	f.Recovered, f.RecoverySeconds, f.MinRate = rec.ok, rec.after.Seconds(), rec.min
	replays1, err := r.replays.count()
	if err != nil {
		return f, err
	}
	f.ReplayedRoots = replays1 - replays0
	r.c.remember(r.name, 2)
	log.Info("measured", zap.Bool("recovered", f.Recovered), zap.Float64("recovery_seconds", f.RecoverySeconds),
		zap.Bool("complete", f.Complete), zap.Float64("complete_seconds", f.CompleteSeconds), zap.Int64("replayed_roots", f.ReplayedRoots))
	return f, nil
}

// victims returns the pids of the processes a fault kills.
func (r *run) victims(kind string) (int, map[string]int, error) {
	container := victimContainer
	if kind == FaultTManager {
		container = 0
	}
	procs, err := r.c.pids(r.name, container)
	if err != nil {
		return 0, nil, err
	}
	pick := func(prefix string) (map[string]int, error) {
		var names []string
		for name := range procs {
			if strings.HasPrefix(name, prefix) {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("container %d runs no %s* process: %v", container, prefix, procs)
		}
		sort.Strings(names)
		return map[string]int{names[0]: procs[names[0]]}, nil
	}
	var out map[string]int
	switch kind {
	case FaultBolt:
		out, err = pick("instance-" + ackcheck.Relay + "-")
	case FaultSpout:
		out, err = pick("instance-" + ackcheck.Source + "-")
	case FaultStmgr:
		out, err = pick("stmgr")
	case FaultMetricsMgr:
		out, err = pick("metricsmgr")
	case FaultTManager:
		out, err = pick("tmanager")
	case FaultContainer:
		out = procs
	}
	return container, out, err
}

// recovery is the outcome of recoveryOf.
type recovery struct {
	ok    bool
	after time.Duration // from the kill to the end of the first good window
	min   float64       // lowest windowed rate after the kill
}

// recoveryOf finds, in the samples of a cumulative counter, the first
// window of length w ending at t > kill+w (stepping by w/5) whose rate is
// at least (1-tol)·base and such that every window ending in [t, t+hold]
// is too. Windows start at the kill or later. A rate above the baseline
// counts as recovered: a backlog draining, or a baseline taken while the
// machine was busier.
func recoveryOf(s harness.Series, kill time.Time, base float64, w, hold time.Duration, tol float64) recovery {
	out := recovery{min: -1}
	last, ok := s.Last()
	if !ok || base <= 0 {
		return out
	}
	step := w / 5
	var start time.Time // of the current stretch of good windows
	for t := kill.Add(w); !t.After(last.At); t = t.Add(step) {
		a, errA := s.At(t.Add(-w))
		b, errB := s.At(t)
		if errA != nil || errB != nil {
			continue
		}
		v := (b - a) / w.Seconds()
		if out.min < 0 || v < out.min {
			out.min = v
		}
		if v < base*(1-tol) {
			start = time.Time{}
			continue
		}
		if start.IsZero() {
			start = t
		}
		if t.Sub(start) >= hold && !out.ok {
			out.ok, out.after = true, start.Sub(kill)
		}
	}
	if out.min < 0 {
		out.min = 0
	}
	return out
}
