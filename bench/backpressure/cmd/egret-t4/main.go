// Command egret-t4 runs benchmark T4 (issue 6, package bench/backpressure):
// an unthrottled spout into a bolt limited to -rate tuples/s on a fresh
// 2-container local cluster for -duration, then the bolt unlimited. It
// writes the JSON result (memory over time, time to engage and release
// back pressure) and prints the markdown report; it never judges figures
// by exit code.
//
//	go run ./bench/backpressure/cmd/egret-t4                 # 10 minutes
//	go run ./bench/backpressure/cmd/egret-t4 -quick          # about a minute
//	go run ./bench/backpressure/cmd/egret-t4 -md t4.md -prop egret.stmgr.socket.buffer.bytes=256KiB
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/egret-stream/egret/bench/backpressure"
	"github.com/egret-stream/egret/bench/harness"
)

type props []string

func (p *props) String() string     { return strings.Join(*p, ",") }
func (p *props) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var o backpressure.Options
	var quick, keep bool
	var out, md string
	var extra props
	flag.DurationVar(&o.Duration, "duration", 10*time.Minute, "how long the bolt stays slow")
	flag.BoolVar(&quick, "quick", false, "a short run: -duration 1m, samples every 2s")
	flag.IntVar(&o.Rate, "rate", 1000, "the slow bolt's tuples per second")
	flag.IntVar(&o.Payload, "payload", 1024, "padding bytes per tuple")
	flag.StringVar(&o.Egret, "egret", "", "the egret binary (default: built from this checkout)")
	flag.StringVar(&o.Topology, "topology", "", "the slowbolt binary (default: built from this checkout)")
	flag.StringVar(&out, "out", "", "JSON result file (default bench/results/t4-backpressure[-quick].json)")
	flag.StringVar(&md, "md", "", "also write the markdown report to this file")
	flag.BoolVar(&keep, "keep", false, "keep EGRET_HOME (logs, metrics files)")
	flag.Var(&extra, "prop", "a --config-property key=value for the cluster (repeatable)")
	flag.Parse()
	if quick {
		o.Duration, o.SampleEvery = time.Minute, 2*time.Second
	}
	o.Props, o.Keep, o.Log = extra, keep, os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, &o, quick, out, md); err != nil {
		fmt.Fprintf(os.Stderr, "egret-t4: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o *backpressure.Options, quick bool, out, md string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := harness.ModuleRoot(ctx, wd)
	if err != nil && (o.Egret == "" || o.Topology == "" || out == "") {
		return err
	}
	if o.Egret == "" || o.Topology == "" {
		dir, err := os.MkdirTemp("", "egret-t4-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if o.Egret == "" {
			if o.Egret, err = harness.Build(ctx, root, "./cmd/egret", dir, "egret"); err != nil {
				return err
			}
		}
		if o.Topology == "" {
			if o.Topology, err = harness.Build(ctx, root, "./test/e2e/testdata/slowbolt", dir, "slowbolt"); err != nil {
				return err
			}
		}
	}
	if out == "" {
		name := "t4-backpressure.json"
		if quick {
			name = "t4-backpressure-quick.json"
		}
		out = filepath.Join(root, "bench", "results", name)
	}
	res, err := backpressure.Run(ctx, *o)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "egret-t4: wrote %s\n", out)
	if md != "" {
		f, err := os.Create(md)
		if err != nil {
			return err
		}
		if err := res.WriteMarkdown(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return res.WriteMarkdown(os.Stdout)
}
