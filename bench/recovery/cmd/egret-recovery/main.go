// Command egret-recovery runs Egret's fault-recovery benchmark (T5): the
// at-least-once ackcheck topology on a fresh local cluster at half its
// measured maximum throughput, one kill -9 per process kind while data
// flows, and per fault the time until the sink throughput is back within
// 10%, the time until every message emitted before the kill is acked, and
// the replayed roots. It writes JSON to -out and a markdown table to
// stdout. See package bench/recovery.
//
//	go run ./bench/recovery/cmd/egret-recovery -quick            # under ~2 minutes
//	go run ./bench/recovery/cmd/egret-recovery -out bench/results/t5-recovery.json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/egret-stream/egret/bench/recovery"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() { os.Exit(run()) }

func run() int {
	var o recovery.Options
	var out, faults string
	var props list
	fs := flag.NewFlagSet("egret-recovery", flag.ContinueOnError)
	fs.BoolVar(&o.Quick, "quick", false, "short windows and a 3s message timeout: the whole run takes under ~2 minutes")
	fs.StringVar(&o.Egret, "egret", "", "prebuilt egret binary (default: build ./cmd/egret)")
	fs.StringVar(&o.Topology, "topology", "", "prebuilt ackcheck binary (default: build ./bench/topologies/ackcheck)")
	fs.IntVar(&o.Rate, "rate", 0, "messages per second (default: measure the maximum and run at -fraction of it)")
	fs.Float64Var(&o.Fraction, "fraction", 0.5, "fraction of the measured maximum to run at")
	fs.StringVar(&faults, "faults", "", "comma-separated fault kinds (default all: "+strings.Join(recovery.AllFaults, ",")+")")
	fs.DurationVar(&o.Baseline, "baseline", 0, "sink-rate window before each kill (default 5s, quick 2s)")
	fs.DurationVar(&o.MessageTimeout, "message-timeout", 0, "topology.message.timeout (default 10s, quick 3s)")
	fs.DurationVar(&o.Limit, "limit", 0, "longest wait for recovery after a kill (default 90s, quick 30s)")
	fs.Var(&props, "prop", "more cluster config: key=value (repeatable)")
	fs.BoolVar(&o.Keep, "keep", false, "keep EGRET_HOME (logs and the topology's state directory)")
	fs.StringVar(&out, "out", "", "write the JSON result to this file")
	verbose := fs.Bool("v", false, "log progress to stderr")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "egret-recovery: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if faults != "" {
		o.Faults = strings.Split(faults, ",")
	}
	o.Props = props
	level := zapcore.WarnLevel
	if *verbose {
		level = zapcore.InfoLevel
	}
	enc := zap.NewDevelopmentEncoderConfig()
	log := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(os.Stderr), level))
	defer func() { _ = log.Sync() }()
	o.Log = log

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := recovery.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "egret-recovery: %v\n", err)
		return 1
	}
	if out != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err == nil {
			err = os.WriteFile(out, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "egret-recovery: write %s: %v\n", out, err)
			return 1
		}
	}
	if err := res.WriteMarkdown(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "egret-recovery: %v\n", err)
		return 1
	}
	return 0
}
