// Command egret-scale measures Egret's control plane at N containers
// (bench/scale): for each N, one run at steady state with a frozen
// container, and one effectively-once run measuring checkpoints.
//
//	go run ./bench/scale/cmd/egret-scale -n 10,100,300 -report docs/benchmarks.md
//	go run ./bench/scale/cmd/egret-scale -n 1000 -report docs/benchmarks.md -merge
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/egret-stream/egret/bench/scale"
)

func main() {
	scale.ChildMain()
	var (
		ns     = flag.String("n", "10,100,300", "comma-separated container counts")
		steady = flag.Duration("steady", 20*time.Second, "window over which the topology manager's CPU is read")
		report = flag.String("report", "", "markdown file whose Scale section to rewrite")
		out    = flag.String("json", "bench/results/scale.json", "results file (with -merge, earlier results of other N are kept)")
		merge  = flag.Bool("merge", false, "keep the results of other N from -json in the report")
		noEO   = flag.Bool("no-eo", false, "skip the effectively-once runs")
		keep   = flag.Bool("keep", false, "keep each run's directory (state manager, tmanager.log)")
	)
	flag.Parse()
	var counts []int
	for _, f := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 20000 {
			fmt.Fprintf(os.Stderr, "egret-scale: -n %q: want comma-separated container counts 1..20000\n", *ns)
			os.Exit(2)
		}
		counts = append(counts, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, counts, *steady, *report, *out, *merge, !*noEO, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "egret-scale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, counts []int, steady time.Duration, report, out string, merge, eo, keep bool) error {
	var results []*scale.Result
	if merge {
		if b, err := os.ReadFile(out); err == nil {
			if err := json.Unmarshal(b, &results); err != nil {
				return fmt.Errorf("-merge: %s: %w", out, err)
			}
		}
		keep := results[:0]
		for _, r := range results {
			drop := false
			for _, n := range counts {
				drop = drop || r.Containers == n
			}
			if !drop {
				keep = append(keep, r)
			}
		}
		results = keep
	}
	commit := "unknown"
	if b, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(b))
	}
	for _, n := range counts {
		for _, effOnce := range []bool{false, true} {
			if effOnce && !eo {
				continue
			}
			dir, err := os.MkdirTemp("", "egret-scale-")
			if err != nil {
				return err
			}
			res, err := scale.Run(ctx, scale.Config{Containers: n, EffectivelyOnce: effOnce, Kill: !effOnce, Steady: steady,
				Dir: dir, Log: os.Stderr})
			if err != nil {
				return fmt.Errorf("N=%d (effectively-once %v): %w (logs kept in %s)", n, effOnce, err, dir)
			}
			if keep {
				fmt.Fprintf(os.Stderr, "N=%d: logs in %s\n", n, dir)
			} else {
				_ = os.RemoveAll(dir)
			}
			results = append(results, res)
		}
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := scale.WriteJSON(out, results); err != nil {
		return err
	}
	md := scale.Markdown(results, commit)
	fmt.Print(md)
	if report == "" {
		return nil
	}
	return scale.UpdateSection(report, md)
}
