// Command egret-nexmark runs the Nexmark queries (examples/nexmark) on
// fresh local clusters and writes their table to docs/benchmarks.md
// (between its own markers): for each query, container mode and delivery
// mode, the time from the first to the last event the source emitted,
// the CPU of every engine process over that time (from /proc), and the
// throughput per core (events ÷ CPU seconds), beside the Flink 1.13
// figures the nexmark project publishes.
//
//	go run ./bench/cmd/egret-nexmark -events 1000000 -report docs/benchmarks.md
//	go run ./bench/cmd/egret-nexmark -quick
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/egret-stream/egret/bench/harness"
	"github.com/egret-stream/egret/examples/nexmark/queries"
)

// flink is the nexmark project's published Flink 1.13 throughput per
// core (K events/s), 100 M events per query, 8 cores × 3 task managers.
var flink = map[string]float64{
	"q0": 155, "q1": 158, "q2": 175, "q3": 152, "q4": 34, "q5": 22, "q7": 12, "q8": 146, "q9": 14,
	"q10": 47, "q11": 40, "q12": 76, "q13": 131, "q14": 161, "q15": 34, "q16": 19, "q17": 41,
	"q18": 48, "q19": 46, "q20": 39, "q21": 143, "q22": 146,
}

// The markers of the Nexmark section of docs/benchmarks.md.
const (
	beginMarker = "<!-- BEGIN NEXMARK (make nexmark, bench/cmd/egret-nexmark): do not edit between these markers -->"
	endMarker   = "<!-- END NEXMARK -->"
)

// section is the generated part of docs/benchmarks.md's §Nexmark.
var section = harness.Appended(beginMarker, endMarker,
	"## Nexmark\n\nSee docs/nexmark.md for what the queries compute, their plans and how the figures are measured.")

type row struct {
	query, mode, delivery string
	events                int64
	seconds, cpu          float64
	err                   error
}

func main() {
	var (
		events      = flag.Int64("events", 1_000_000, "events per query run")
		only        = flag.String("queries", "", "comma-separated queries (default: all)")
		modes       = flag.String("container-modes", "default,process-per-container", "container modes: default (the runtime's) and/or named modes")
		parallelism = flag.Int("parallelism", 1, "source and operator parallelism")
		report      = flag.String("report", "", "markdown file whose Nexmark section to rewrite")
		quick       = flag.Bool("quick", false, "100,000 events, q0, q1, q5 and q17, default container mode, no report")
		eo          = flag.Bool("effectively-once", true, "also run the stateful queries effectively-once with 10 s checkpoints")
		allModes    = flag.String("all-modes-queries", "", "comma-separated queries run in every container mode; the others only in the first (default: all in every mode)")
	)
	flag.Parse()
	if *quick {
		*events, *only, *modes, *report, *eo = 100_000, "q0,q1,q5,q17", "default", "", false
	}
	names := queries.Names()
	if *only != "" {
		names = strings.Split(*only, ",")
		for _, n := range names {
			if queries.All[n] == nil {
				fmt.Fprintf(os.Stderr, "-queries: %q is not a query (%s)\n", n, strings.Join(queries.Names(), ", "))
				os.Exit(2)
			}
		}
	}
	if *events <= 0 || *parallelism < 1 {
		fmt.Fprintln(os.Stderr, "-events and -parallelism must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	every := map[string]bool{}
	for _, n := range strings.Split(*allModes, ",") {
		every[n] = n != ""
	}
	if *allModes == "" {
		for _, n := range names {
			every[n] = true
		}
	}
	if err := run(ctx, names, strings.Split(*modes, ","), every, *events, *parallelism, *eo, *report); err != nil {
		fmt.Fprintln(os.Stderr, "egret-nexmark:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, names, modes []string, every map[string]bool, events int64, parallelism int, eo bool, report string) error {
	root, err := harness.ModuleRoot(ctx, ".")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "egret-nexmark-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The commit the binaries are built from (before they are built, so a
	// commit made during the run does not end up in the report).
	commit := describeCommit(ctx, root)
	egretBin, err := harness.Build(ctx, root, "./cmd/egret", dir, "egret")
	if err != nil {
		return err
	}
	nexmarkBin, err := harness.Build(ctx, root, "./examples/nexmark", dir, "nexmark")
	if err != nil {
		return err
	}
	var rows []row
	for _, name := range names {
		deliveries := []string{"at-least-once"}
		if eo && queries.All[name].Stateful {
			deliveries = append(deliveries, "effectively-once")
		}
		for i, mode := range modes {
			if i > 0 && !every[name] {
				continue
			}
			for _, d := range deliveries {
				r := measure(ctx, egretBin, nexmarkBin, name, mode, d, events, parallelism)
				if r.err != nil {
					fmt.Fprintf(os.Stderr, "%s %s %s: %v\n", name, mode, d, r.err)
				} else {
					fmt.Printf("%-4s %-22s %-16s %d events in %.2fs, %.2f CPU s: %.0f events/s per core\n",
						name, mode, d, r.events, r.seconds, r.cpu, float64(r.events)/r.cpu)
				}
				rows = append(rows, r)
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	if report == "" {
		return nil
	}
	return writeReport(report, commit, rows, events, parallelism)
}

// describeCommit is HEAD's short hash, with "+changes" when the working
// tree differs from it.
func describeCommit(ctx context.Context, root string) string {
	head, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(head))
	if st, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "+changes"
	}
	return c
}

// measure runs one query on a fresh local cluster until the source has
// emitted every event, sampling the source's counter and the engine's CPU.
func measure(ctx context.Context, egretBin, nexmarkBin, query, mode, delivery string, events int64, parallelism int) (r row) {
	r = row{query: query, mode: mode, delivery: delivery, events: events}
	c, err := harness.NewLocalCluster(egretBin, []string{"egret.metrics.export.interval=250ms"})
	if err != nil {
		r.err = err
		return r
	}
	defer c.Remove()
	topo := "nexmark-" + query
	args := []string{"submit", harness.ClusterName, nexmarkBin, "--", "--query", query, "--events", strconv.FormatInt(events, 10),
		"--parallelism", strconv.Itoa(parallelism), "--delivery", delivery, "--checkpoint-interval", "10s"}
	if mode != "default" {
		args = append(args, "--container-mode", mode)
	}
	if _, err := c.CLI(ctx, args...); err != nil {
		r.err = err
		return r
	}
	defer func() {
		if err := c.KillWhile(context.WithoutCancel(ctx), topo, func() []int { return nil }); err != nil && r.err == nil {
			r.err = err
		}
	}()
	type sample struct {
		at  time.Time
		cpu float64
	}
	var cpus []sample
	deadline := time.Now().Add(20*time.Minute + time.Duration(events/10_000)*time.Second)
	component := query + "-events"
	for {
		if time.Now().After(deadline) {
			r.err = errors.New("the source did not emit every event in time")
			return r
		}
		if err := ctx.Err(); err != nil {
			r.err = err
			return r
		}
		time.Sleep(100 * time.Millisecond)
		cpu, err := c.EngineCPU(topo)
		if err != nil {
			continue // not started yet
		}
		cpus = append(cpus, sample{time.Now(), cpu})
		series, err := c.CounterSeries(topo, component, "user.nexmark.events")
		if err != nil || len(series) < parallelism {
			continue
		}
		first, last, ok := span(series, events)
		if !ok {
			continue
		}
		if len(cpus) < 2 || cpus[len(cpus)-1].at.Before(last) {
			continue
		}
		at := func(t time.Time) float64 {
			for i := 1; i < len(cpus); i++ {
				if !cpus[i].at.Before(t) {
					a, b := cpus[i-1], cpus[i]
					f := float64(t.Sub(a.at)) / float64(b.at.Sub(a.at))
					return a.cpu + f*(b.cpu-a.cpu)
				}
			}
			return cpus[len(cpus)-1].cpu
		}
		r.seconds = last.Sub(first).Seconds()
		r.cpu = at(last) - at(first)
		if r.cpu <= 0 || r.seconds <= 0 {
			r.err = fmt.Errorf("no CPU time or duration measured (%.3f s, %.3f CPU s)", r.seconds, r.cpu)
		}
		return r
	}
}

// span returns when the source tasks together emitted their first event
// (the last sample at zero) and their last one (interpolated to the
// total), or false when they have not emitted all yet.
func span(series map[int]harness.Series, total int64) (first, last time.Time, ok bool) {
	var sum float64
	for _, s := range series {
		l, ok := s.Last()
		if !ok {
			return first, last, false
		}
		sum += l.Value
		for i, smp := range s {
			if smp.Value > 0 {
				t := smp.At
				if i > 0 {
					t = s[i-1].At
				}
				if first.IsZero() || t.Before(first) {
					first = t
				}
				break
			}
		}
		// The moment this task reached its final count.
		for i, smp := range s {
			if smp.Value >= l.Value {
				t := smp.At
				if i > 0 && smp.Value > s[i-1].Value {
					prev := s[i-1]
					// Interpolate within the last interval.
					t = prev.At.Add(time.Duration(float64(smp.At.Sub(prev.At)) * (l.Value - prev.Value) / (smp.Value - prev.Value)))
				}
				if t.After(last) {
					last = t
				}
				break
			}
		}
	}
	return first, last, int64(sum) >= total && !first.IsZero()
}

func writeReport(path, commit string, rows []row, events int64, parallelism int) error {
	m := harness.DescribeMachine()
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %d × %s, %s, kernel %s, %s; load average when the table was written %s; %s. Egret commit %s. %d events per run, parallelism %d, one container, the source unthrottled.\n\n",
		m.NProc, m.CPUModel, m.MemTotal, m.Kernel, m.GoVersion, m.LoadAvg, m.Date.UTC().Format(time.RFC3339), commit, events, parallelism)
	b.WriteString("| query | container mode | delivery | time first→last event (s) | engine CPU (core·s) | cores used | K events/s per core | Flink 1.13 K/s per core | ratio to Flink |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | | | | | |\n", r.query, r.mode, r.delivery, strings.ReplaceAll(reason(r.err), "|", "/"))
			continue
		}
		perCore := float64(r.events) / r.cpu / 1000
		fl, ratio := "–", "–"
		if f, ok := flink[r.query]; ok {
			fl, ratio = fmt.Sprintf("%.0f", f), fmt.Sprintf("%.2f×", perCore/f)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %.2f | %.2f | %.1f | %s | %s |\n",
			r.query, r.mode, r.delivery, r.seconds, r.cpu, r.cpu/r.seconds, perCore, fl, ratio)
	}
	b.WriteString("\n")
	return section.Update(path, b.String())
}

// reason is a failed run's cell: why effectively-once was refused, or the
// error's first line.
func reason(err error) string {
	s := err.Error()
	if strings.Contains(s, "cannot be checkpointed") {
		return "refused at submit: its windows or table operators keep state outside checkpoints (api.NotCheckpointed)"
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return "failed: " + s
}
