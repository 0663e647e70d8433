package backpressure

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/egret-stream/egret/bench/harness"
	"github.com/egret-stream/egret/daemons/stmgr"
)

// Options configure a T4 run.
type Options struct {
	// Egret is the egret binary; Topology the built slowbolt binary.
	Egret, Topology string
	// Duration is how long the bolt stays slow (default 10m).
	Duration time.Duration
	// Warmup is excluded from the slopes (default a fifth of Duration, at
	// most 1m).
	Warmup time.Duration
	// SampleEvery is the RSS sampling interval (default 3s).
	SampleEvery time.Duration
	// Rate is the slow bolt's tuples per second (default 1000); Payload
	// the padding bytes per tuple (default 1024).
	Rate, Payload int
	// Props are --config-property overrides of the local cluster.
	Props []string
	// Keep keeps EGRET_HOME (logs, metrics files).
	Keep bool
	// Log receives progress lines (default io.Discard).
	Log io.Writer
}

// Sample is one instant of the run.
type Sample struct {
	// Seconds since the submission returned.
	Seconds float64 `json:"seconds"`
	// RSSMiB is, per process kind, the largest VmRSS among its processes.
	RSSMiB map[string]float64 `json:"rss_mib"`
	// Emitted and Executed are the spout's and the bolt's report counters.
	Emitted  int64 `json:"emitted"`
	Executed int64 `json:"executed"`
}

// KindSummary is the memory of one process kind over the slow phase.
type KindSummary struct {
	harness.Stat
	// SlopeMiBPerMin is the least-squares slope of RSS after warm-up.
	SlopeMiBPerMin float64 `json:"slope_mib_per_min"`
}

// Result is a T4 run's outcome.
type Result struct {
	Name     string          `json:"name"`
	Machine  harness.Machine `json:"machine"`
	Settings struct {
		DurationSeconds float64  `json:"duration_seconds"`
		WarmupSeconds   float64  `json:"warmup_seconds"`
		SampleSeconds   float64  `json:"sample_seconds"`
		Rate            int      `json:"bolt_rate"`
		Payload         int      `json:"payload_bytes"`
		Props           []string `json:"config_properties"`
	} `json:"settings"`
	// Samples is memory and progress over time (slow phase, then release).
	Samples []Sample `json:"samples"`
	// Kinds summarizes RSSMiB per kind over the slow phase.
	Kinds map[string]KindSummary `json:"kinds"`
	// EngageSeconds: from the submission until the spout's stream manager
	// first published back pressure on. ReleaseSeconds: from setting the
	// bolt unlimited until it published it off. RecoverSeconds: until the
	// bolt executed above 20× Rate over 2s. Negative: not observed.
	EngageSeconds  float64 `json:"engage_seconds"`
	ReleaseSeconds float64 `json:"release_seconds"`
	RecoverSeconds float64 `json:"recover_seconds"`
	// EmitPerSec and ExecutePerSec are the rates after warm-up.
	EmitPerSec    float64 `json:"emit_per_sec"`
	ExecutePerSec float64 `json:"execute_per_sec"`
	// ThrottledSeconds is the spout's stream manager's total time with
	// its spouts not read, at the end of the slow phase.
	ThrottledSeconds float64  `json:"throttled_seconds"`
	Notes            []string `json:"notes,omitempty"`
}

func (o *Options) defaults() error {
	if o.Egret == "" || o.Topology == "" {
		return errors.New("t4: the egret and slowbolt binaries are required")
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Minute
	}
	if o.Warmup <= 0 {
		o.Warmup = min(o.Duration/5, time.Minute)
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 3 * time.Second
	}
	if o.Rate <= 0 {
		o.Rate = 1000
	}
	if o.Payload < 0 {
		return fmt.Errorf("t4: payload %d is negative", o.Payload)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

const topology = "slowbolt"

// report is the part of the topology's report files T4 reads.
type report struct {
	Emitted  int64 `json:"emitted"`
	Executed int64 `json:"executed"`
	At       int64 `json:"at"`
}

func readReports(dir string) (src, bolt report) {
	read := func(pattern string, r *report) {
		files, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range files {
			var x report
			if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &x) == nil {
				r.Emitted += x.Emitted
				r.Executed += x.Executed
				r.At = max(r.At, x.At)
			}
		}
	}
	read("source-*.json", &src)
	read("slow-*.json", &bolt)
	return src, bolt
}

// Run runs T4 once on a fresh local cluster.
func Run(ctx context.Context, o Options) (res *Result, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	props := append([]string{"egret.metrics.export.interval=500ms"}, o.Props...)
	c, err := harness.NewLocalCluster(o.Egret, props)
	if err != nil {
		return nil, err
	}
	res = &Result{Name: "t4-backpressure", Machine: harness.DescribeMachine(), Kinds: map[string]KindSummary{}}
	res.Settings.DurationSeconds = o.Duration.Seconds()
	res.Settings.WarmupSeconds = o.Warmup.Seconds()
	res.Settings.SampleSeconds = o.SampleEvery.Seconds()
	res.Settings.Rate, res.Settings.Payload = o.Rate, o.Payload
	res.Settings.Props = props
	seen := map[int]bool{}
	defer func() {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		pids := make([]int, 0, len(seen))
		for p := range seen {
			pids = append(pids, p)
		}
		if kerr := c.Kill(kctx, topology, pids); kerr != nil {
			err = errors.Join(err, fmt.Errorf("kill: %w", kerr))
		}
		if o.Keep || err != nil {
			fmt.Fprintf(o.Log, "t4: EGRET_HOME kept: %s\n", c.Home())
			return
		}
		err = errors.Join(err, os.RemoveAll(c.Home()))
	}()

	state := filepath.Join(c.Home(), "slowbolt-state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		return nil, err
	}
	setRate := func(n int) error {
		p := filepath.Join(state, "slow-rate")
		if err := os.WriteFile(p+".tmp", []byte(strconv.Itoa(n)), 0o644); err != nil {
			return err
		}
		return os.Rename(p+".tmp", p)
	}
	if err := setRate(o.Rate); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "t4: submitting slowbolt (bolt at %d tuples/s, %d-byte payload) for %s\n", o.Rate, o.Payload, o.Duration)
	if _, err := c.CLI(ctx, "submit", harness.ClusterName, o.Topology, "--", "--state", state,
		"--rate", strconv.Itoa(o.Rate), "--payload", strconv.Itoa(o.Payload), "--containers", "2"); err != nil {
		return nil, err
	}
	start := time.Now()

	sample := func() Sample {
		kinds, _ := c.ProcessKinds(topology) // nil while a pids.json is being rewritten: the sample is skipped
		s := Sample{Seconds: time.Since(start).Seconds(), RSSMiB: map[string]float64{}}
		for pid, kind := range kinds {
			seen[pid] = true
			if rss, ok := harness.VmRSS(pid); ok {
				s.RSSMiB[kind] = max(s.RSSMiB[kind], float64(rss)/(1<<20))
			}
		}
		src, bolt := readReports(state)
		s.Emitted, s.Executed = src.Emitted, bolt.Executed
		return s
	}
	sleep := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		}
	}

	end := start.Add(o.Duration)
	next := time.Now()
	for time.Now().Before(end) {
		s := sample()
		res.Samples = append(res.Samples, s)
		if len(res.Samples)%20 == 1 {
			fmt.Fprintf(o.Log, "t4: %4.0fs emitted %d executed %d stmgr %.1f MiB\n", s.Seconds, s.Emitted, s.Executed, s.RSSMiB["stmgr"])
		}
		next = next.Add(o.SampleEvery)
		if err := sleep(max(0, min(time.Until(next), time.Until(end)))); err != nil {
			return nil, err
		}
	}
	slowSamples := len(res.Samples)
	metrics := filepath.Join(c.WorkDir(topology), "container-1", "metrics.jsonl")
	active, err := harness.ReadSeries(metrics, harness.Source{Kind: "stmgr"}, stmgr.MetricBackPressureActive)
	if err != nil {
		return nil, fmt.Errorf("read the spout's stream manager's metrics: %w", err)
	}
	res.EngageSeconds = firstAt(active[1], start, 1)
	throttled, err := harness.ReadSeries(metrics, harness.Source{Kind: "stmgr"}, stmgr.MetricBackPressureThrottled)
	if err == nil {
		if last, ok := throttled[1].Last(); ok {
			res.ThrottledSeconds = last.Value / 1e9
		}
	}
	res.summarize(slowSamples, o.Warmup.Seconds())

	// Release: the bolt becomes unlimited.
	released := time.Now()
	if err := setRate(0); err != nil {
		return nil, err
	}
	res.RecoverSeconds, res.ReleaseSeconds = -1, -1
	var hist []report
	for time.Since(released) < time.Minute && (res.RecoverSeconds < 0 || res.ReleaseSeconds < 0) {
		if err := sleep(200 * time.Millisecond); err != nil {
			return nil, err
		}
		if res.RecoverSeconds < 0 {
			_, bolt := readReports(state)
			if len(hist) == 0 || bolt.At != hist[len(hist)-1].At {
				hist = append(hist, bolt)
			}
			for len(hist) > 2 && time.Duration(bolt.At-hist[1].At) >= 2*time.Second {
				hist = hist[1:]
			}
			if f := hist[0]; bolt.At-f.At >= int64(time.Second) &&
				float64(bolt.Executed-f.Executed)/time.Duration(bolt.At-f.At).Seconds() > 20*float64(o.Rate) {
				res.RecoverSeconds = time.Since(released).Seconds()
			}
		}
		if res.ReleaseSeconds < 0 {
			if active, err := harness.ReadSeries(metrics, harness.Source{Kind: "stmgr"}, stmgr.MetricBackPressureActive); err == nil {
				res.ReleaseSeconds = firstAt(active[1], released, 0)
			}
		}
		if len(res.Samples) < slowSamples+10 {
			res.Samples = append(res.Samples, sample())
		}
	}
	if res.RecoverSeconds < 0 {
		res.Notes = append(res.Notes, "the bolt did not reach full speed within 1m of becoming unlimited")
	}
	if res.ReleaseSeconds < 0 {
		res.Notes = append(res.Notes, "back pressure was not released within 1m of the bolt becoming unlimited")
	}
	return res, nil
}

// firstAt returns the seconds from since until the first sample after
// since whose value is v, or -1.
func firstAt(s harness.Series, since time.Time, v float64) float64 {
	for _, x := range s {
		if x.At.After(since) && x.Value == v {
			return x.At.Sub(since).Seconds()
		}
	}
	return -1
}

// summarize computes the per-kind memory figures over the first n
// samples and the rates after warmup seconds.
func (r *Result) summarize(n int, warmup float64) {
	byKind := map[string][]float64{}
	type pt struct{ x, y float64 }
	after := map[string][]pt{}
	var first, last *Sample
	for i := range r.Samples[:n] {
		s := &r.Samples[i]
		for k, v := range s.RSSMiB {
			byKind[k] = append(byKind[k], v)
			if s.Seconds >= warmup {
				after[k] = append(after[k], pt{s.Seconds / 60, v})
			}
		}
		if s.Seconds >= warmup {
			if first == nil {
				first = s
			}
			last = s
		}
	}
	for k, xs := range byKind {
		ks := KindSummary{Stat: harness.Summarize(xs)}
		if ps := after[k]; len(ps) >= 2 {
			var sx, sy, sxx, sxy float64
			for _, p := range ps {
				sx, sy, sxx, sxy = sx+p.x, sy+p.y, sxx+p.x*p.x, sxy+p.x*p.y
			}
			m := float64(len(ps))
			if d := m*sxx - sx*sx; d != 0 {
				ks.SlopeMiBPerMin = (m*sxy - sx*sy) / d
			}
		}
		r.Kinds[k] = ks
	}
	if first != nil && last != nil && last.Seconds > first.Seconds {
		d := last.Seconds - first.Seconds
		r.EmitPerSec = float64(last.Emitted-first.Emitted) / d
		r.ExecutePerSec = float64(last.Executed-first.Executed) / d
	}
}

// WriteMarkdown writes the report: settings, times, rates and the
// per-kind memory table.
func (r *Result) WriteMarkdown(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "### T4 back pressure (%s)\n\n", r.Machine.Date.Format(time.DateOnly))
	fmt.Fprintf(&b, "Bolt limited to %d tuples/s for %.0fs (%d-byte payload), %d cores; warm-up %.0fs; settings %v.\n\n",
		r.Settings.Rate, r.Settings.DurationSeconds, r.Settings.Payload, r.Machine.NProc, r.Settings.WarmupSeconds, r.Settings.Props)
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| time to engage back pressure | %s |\n", seconds(r.EngageSeconds))
	fmt.Fprintf(&b, "| time to release it (bolt unlimited) | %s |\n", seconds(r.ReleaseSeconds))
	fmt.Fprintf(&b, "| time to full speed (>20× the slow rate) | %s |\n", seconds(r.RecoverSeconds))
	fmt.Fprintf(&b, "| spout emit rate after warm-up | %.0f/s |\n", r.EmitPerSec)
	fmt.Fprintf(&b, "| bolt execute rate after warm-up | %.0f/s |\n", r.ExecutePerSec)
	fmt.Fprintf(&b, "| spout throttled (total) | %.0fs |\n\n", r.ThrottledSeconds)
	fmt.Fprintf(&b, "| process kind | min RSS MiB | median | max | slope after warm-up MiB/min |\n|---|---|---|---|---|\n")
	kinds := make([]string, 0, len(r.Kinds))
	for k := range r.Kinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		s := r.Kinds[k]
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %+.2f |\n", k, s.Min, s.Median, s.Max, s.SlopeMiBPerMin)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nNote: %s\n", n)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func seconds(v float64) string {
	if v < 0 || math.IsNaN(v) {
		return "not observed"
	}
	return fmt.Sprintf("%.1fs", v)
}
