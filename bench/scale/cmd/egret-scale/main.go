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
	"slices"
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
		mesh   = flag.String("mesh", "10,30,60", "comma-separated container counts of the real-stream-manager mesh runs (\"\" for none; each peer connection takes 2 of this process's file descriptors)")
		keep   = flag.Bool("keep", false, "keep each run's directory (state manager, tmanager.log)")
	)
	flag.Parse()
	counts, err := parseCounts("-n", *ns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "egret-scale:", err)
		os.Exit(2)
	}
	meshCounts, err := parseCounts("-mesh", *mesh)
	if err != nil {
		fmt.Fprintln(os.Stderr, "egret-scale:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, counts, meshCounts, *steady, *report, *out, *merge, !*noEO, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "egret-scale:", err)
		os.Exit(1)
	}
}

// parseCounts parses a comma-separated list of container counts.
func parseCounts(flagName, v string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 20000 {
			return nil, fmt.Errorf("%s %q: want comma-separated container counts 1..20000", flagName, v)
		}
		out = append(out, n)
	}
	return out, nil
}

// results is the JSON file: the stand-in runs and the mesh runs.
type results struct {
	Runs []*scale.Result     `json:"runs"`
	Mesh []*scale.MeshResult `json:"mesh"`
}

func run(ctx context.Context, counts, meshCounts []int, steady time.Duration, report, out string, merge, eo, keep bool) error {
	var all results
	if merge {
		if b, err := os.ReadFile(out); err == nil {
			if err := json.Unmarshal(b, &all); err != nil {
				return fmt.Errorf("-merge: %s: %w", out, err)
			}
		}
		all.Runs = slices.DeleteFunc(all.Runs, func(r *scale.Result) bool { return slices.Contains(counts, r.Containers) })
		all.Mesh = slices.DeleteFunc(all.Mesh, func(r *scale.MeshResult) bool { return slices.Contains(meshCounts, r.Containers) })
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
				return fmt.Errorf("run of %d containers (effectively-once %v): %w (logs kept in %s)", n, effOnce, err, dir)
			}
			if keep {
				fmt.Fprintf(os.Stderr, "N=%d: logs in %s\n", n, dir)
			} else {
				_ = os.RemoveAll(dir)
			}
			all.Runs = append(all.Runs, res)
		}
	}
	for _, n := range meshCounts {
		dir, err := os.MkdirTemp("", "egret-scale-mesh-")
		if err != nil {
			return err
		}
		res, err := scale.Mesh(ctx, scale.Config{Containers: n, Steady: steady, Dir: dir, Log: os.Stderr})
		if err != nil {
			return fmt.Errorf("mesh N=%d: %w (logs kept in %s)", n, err, dir)
		}
		_ = os.RemoveAll(dir)
		all.Mesh = append(all.Mesh, res)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		return err
	}
	md := scale.Markdown(all.Runs, all.Mesh, commit)
	fmt.Print(md)
	if report == "" {
		return nil
	}
	return scale.UpdateSection(report, md)
}
