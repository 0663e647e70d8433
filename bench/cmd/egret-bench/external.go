package main

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

	"github.com/egret-stream/egret/bench/backpressure"
	"github.com/egret-stream/egret/bench/harness"
	"github.com/egret-stream/egret/bench/recovery"
	"github.com/egret-stream/egret/bench/state"
)

// externals are T4 (bench/backpressure), T5 (bench/recovery) and S
// (bench/state), run by the suite after its own benchmarks.
func externals() []harness.External {
	return []harness.External{
		{Group: "T4", Title: "back pressure: a slow bolt, memory over time", Run: runT4},
		{Group: "T5", Title: "recovery: kill each process kind at 50% load", Run: runT5},
		{Group: "T5-EO", Title: "recovery under effectively-once: kill each process kind at 50% load", Run: runT5EO},
		{Group: "S", Title: "keyed state: counts, checkpoints and restores on the heap and pebble backends (issue 36 S1–S3)", Run: runS},
	}
}

// runS measures keyed state (bench/state) and checks issue 36's targets.
func runS(ctx context.Context, env harness.ExternalEnv) (*harness.ExternalResult, error) {
	name := "s-state"
	cases := []state.Case{{Backend: "heap", Bytes: 128 << 20, ValueBytes: 1024}, {Backend: "pebble", Bytes: 128 << 20, ValueBytes: 1024},
		{Backend: "pebble", Bytes: 1 << 30, ValueBytes: 1024}}
	if env.Quick {
		name += "-quick"
		cases = []state.Case{{Backend: "heap", Bytes: 32 << 20, ValueBytes: 1024}, {Backend: "pebble", Bytes: 64 << 20, ValueBytes: 1024}}
	}
	dir, err := os.MkdirTemp("", "egret-bench-state")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rs, err := state.Run(ctx, state.Options{Dir: dir, Cases: cases, Out: env.Out})
	if err != nil {
		return nil, err
	}
	res := &state.Results{Results: rs}
	md, err := save(env, name, res)
	if err != nil {
		return nil, err
	}
	var targets []harness.Target
	heapRate := 0.0
	for _, r := range rs {
		if r.Backend == "heap" {
			heapRate = max(heapRate, r.UpdatesPerCPUSecond)
		}
	}
	for _, r := range rs {
		what := fmt.Sprintf("%s %d MiB", r.Backend, r.Bytes>>20)
		targets = append(targets,
			harness.Target{Name: "S2 synchronous part of a checkpoint, " + what, Bench: name, Figure: "ms", Want: 50, Got: r.MaxSyncMs(), Measured: true, Met: r.MaxSyncMs() < 50},
			harness.Target{Name: "S2 p99 update during an upload ÷ between uploads, " + what, Bench: name, Figure: "×", Want: 2,
				Got: r.P99DuringUs / max(r.P99BetweenUs, 1e-9), Measured: r.P99BetweenUs > 0, Met: r.P99DuringUs <= 2*r.P99BetweenUs})
		if r.Backend == "pebble" {
			targets = append(targets,
				harness.Target{Name: "S2 incremental checkpoint after 1% of the keys changed ÷ full, " + what, Bench: name, Figure: "%", Want: 10,
					Got: 100 * r.IncrementalFraction(), Measured: true, Met: r.IncrementalFraction() < 0.1},
				harness.Target{Name: "S1 pebble keyed counts ÷ heap's, " + what, Bench: name, Figure: "%", AtLeast: true, Want: 40,
					Got: 100 * r.UpdatesPerCPUSecond / max(heapRate, 1e-9), Measured: heapRate > 0, Met: r.UpdatesPerCPUSecond >= 0.4*heapRate})
		}
	}
	return &harness.ExternalResult{Markdown: md, Targets: targets}, nil
}

// flatSlope is the largest RSS slope after warm-up (MiB per minute) that
// T4 counts as flat memory.
const flatSlope = 1.0

func runT4(ctx context.Context, env harness.ExternalEnv) (*harness.ExternalResult, error) {
	// 1 KiB tuples, as the e2e test: watermarks count bytes (docs/backpressure.md).
	o := backpressure.Options{Egret: env.Egret, Duration: 10 * time.Minute, Payload: 1024, Log: env.Out}
	name := "t4-backpressure"
	if env.Quick {
		o.Duration, name = time.Minute, name+"-quick"
	}
	bin, err := harness.Build(ctx, env.Root, "./test/e2e/testdata/slowbolt", os.TempDir(), "egret-bench-slowbolt")
	if err != nil {
		return nil, err
	}
	defer os.Remove(bin)
	o.Topology = bin
	res, err := backpressure.Run(ctx, o)
	if err != nil {
		return nil, err
	}
	md, err := save(env, name, res)
	if err != nil {
		return nil, err
	}
	worst := 0.0
	for _, k := range res.Kinds {
		worst = max(worst, k.SlopeMiBPerMin)
	}
	t := harness.Target{Name: "T4 memory flat (largest RSS slope after warm-up, any process kind)", Bench: name,
		Figure: "MiB/min", Want: flatSlope, Got: worst, Measured: len(res.Kinds) > 0, Met: worst <= flatSlope}
	return &harness.ExternalResult{Markdown: md, Targets: []harness.Target{t}}, nil
}

func runT5(ctx context.Context, env harness.ExternalEnv) (*harness.ExternalResult, error) {
	return runRecovery(ctx, env, "t5-recovery", recovery.Run, "T5 throughput back within 10%% after a %s kill",
		map[string]float64{recovery.FaultBolt: 5, recovery.FaultStmgr: 10})
}

func runT5EO(ctx context.Context, env harness.ExternalEnv) (*harness.ExternalResult, error) {
	return runRecovery(ctx, env, "t5-recovery-eo", recovery.RunEffectivelyOnce, "T5 effectively-once: throughput back within 10%% after a %s kill",
		map[string]float64{recovery.FaultContainer: 10})
}

// runRecovery runs a recovery benchmark and checks the recovery time of
// the faults in want (seconds) against it; title formats a target's name
// with the fault kind.
func runRecovery(ctx context.Context, env harness.ExternalEnv, name string, run func(context.Context, recovery.Options) (*recovery.Result, error),
	title string, want map[string]float64) (*harness.ExternalResult, error) {
	if env.Quick {
		name += "-quick"
	}
	res, err := run(ctx, recovery.Options{Egret: env.Egret, Root: env.Root, Quick: env.Quick})
	if err != nil {
		return nil, err
	}
	md, err := save(env, name, res)
	if err != nil {
		return nil, err
	}
	var targets []harness.Target
	for _, f := range res.Faults {
		w, ok := want[f.Kind]
		if !ok {
			continue
		}
		t := harness.Target{Name: fmt.Sprintf(title, f.Kind), Bench: name,
			Figure: "s", Want: w, Got: f.RecoverySeconds, Measured: f.Error == "" && f.Recovered}
		t.Met = t.Measured && t.Got <= w
		if !t.Measured {
			t.Note = "did not recover before the limit"
			if f.Error != "" {
				t.Note = f.Error
			}
		}
		targets = append(targets, t)
	}
	return &harness.ExternalResult{Markdown: md, Targets: targets}, nil
}

// save writes res as <name>.json and returns its markdown section.
func save(env harness.ExternalEnv, name string, res interface {
	WriteMarkdown(io.Writer) error
}) (string, error) {
	if err := writeJSON(env, name, res); err != nil {
		return "", err
	}
	var md bytes.Buffer
	if err := res.WriteMarkdown(&md); err != nil {
		return "", err
	}
	return body(md.String()), nil
}

// body drops the markdown's own leading heading: the report puts the
// section under its "### <Group>: <Title>" heading.
func body(md string) string {
	if strings.HasPrefix(md, "#") {
		if i := strings.IndexByte(md, '\n'); i >= 0 {
			return strings.TrimLeft(md[i+1:], "\n")
		}
	}
	return md
}

func writeJSON(env harness.ExternalEnv, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	dir := env.ResultsDir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(env.Root, dir)
	}
	return os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644)
}
