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

// SuiteOptions configure what `make bench` runs.
type SuiteOptions struct {
	// Root is the Egret module's directory (found from the working
	// directory when empty).
	Root string
	// Egret and Topology are prebuilt binaries (egret and
	// bench/topologies/constnull); built from Root when empty.
	Egret, Topology string

	// Cluster runs T1; its figures follow.
	Cluster                   bool
	Name                      string
	Containers, Spouts, Bolts int
	Warmup, Window            time.Duration
	Runs                      int
	MetricsInterval           time.Duration
	Props                     []string
	Keep                      bool
	ProfileSeconds            int

	// Micro runs go test -bench over MicroPackages.
	Micro          bool
	MicroName      string
	MicroPackages  []string
	MicroCount     int
	MicroBenchtime string

	// ResultsDir receives <Name>.json and <MicroName>.json (relative to
	// Root); Report, when set, is the markdown file whose generated
	// section is rewritten (relative to Root).
	ResultsDir string
	Report     string

	// Out receives progress and the markdown (default os.Stdout).
	Out io.Writer
}

// RunSuite runs the selected benchmarks, writes their JSON results and
// the report, and prints the report's generated section.
func RunSuite(ctx context.Context, o SuiteOptions) error {
	if o.Out == nil {
		o.Out = os.Stdout
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
	var rep Report
	if o.Cluster {
		res, err := o.runCluster(ctx, resultsDir)
		if err != nil {
			return err
		}
		rep.Cluster = append(rep.Cluster, res)
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
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "\n%s", md.String())
	if o.Report != "" {
		if err := UpdateFile(abs(o.Report), Skeleton, md.String()); err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
		fmt.Fprintf(o.Out, "report written to %s\n", abs(o.Report))
	}
	return nil
}

func (o *SuiteOptions) runCluster(ctx context.Context, resultsDir string) (*ClusterResult, error) {
	egret, topo := o.Egret, o.Topology
	if egret == "" || topo == "" {
		dir, err := os.MkdirTemp("", "egret-bench-bin-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if egret == "" {
			fmt.Fprintf(o.Out, "building egret\n")
			if egret, err = Build(ctx, o.Root, "./cmd/egret", dir, "egret"); err != nil {
				return nil, err
			}
		}
		if topo == "" {
			fmt.Fprintf(o.Out, "building bench/topologies/constnull\n")
			if topo, err = Build(ctx, o.Root, "./bench/topologies/constnull", dir, "constnull"); err != nil {
				return nil, err
			}
		}
	}
	var prof ProfileOptions
	if o.ProfileSeconds > 0 {
		prof = ProfileOptions{Seconds: o.ProfileSeconds, ReportFile: filepath.Join(resultsDir, o.Name+"-perf.txt")}
	}
	res, err := RunCluster(ctx, ClusterOptions{
		Name:            o.Name,
		Egret:           egret,
		Workload:        ConstNull(topo, o.Containers, o.Spouts, o.Bolts),
		Warmup:          o.Warmup,
		Window:          o.Window,
		Runs:            o.Runs,
		MetricsInterval: o.MetricsInterval,
		Props:           o.Props,
		Keep:            o.Keep,
		Profile:         prof,
		Log:             o.Out,
	})
	if err != nil {
		return nil, err
	}
	if res.Profile != nil && res.Profile.ReportFile != "" {
		if rel, err := filepath.Rel(o.Root, res.Profile.ReportFile); err == nil && !strings.HasPrefix(rel, "..") {
			res.Profile.ReportFile = rel
		}
	}
	if err := writeJSON(filepath.Join(resultsDir, o.Name+".json"), res); err != nil {
		return nil, err
	}
	return res, nil
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
