// Command eowindows is the windowed effectively-once verification
// topology (see package eowindows): Kafka → tumbling, sliding and session
// windows with allowed lateness and a late stream → Kafka.
//
//	egret submit local ./eowindows -- --brokers 127.0.0.1:9092
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/test/e2e/testdata/eowindows/eowindows"
)

func main() {
	var o eowindows.Options
	fs := flag.NewFlagSet("eowindows", flag.ContinueOnError)
	fs.StringVar(&o.Brokers, "brokers", "", "Kafka bootstrap brokers (host:port,...)")
	fs.StringVar(&o.Input, "input", "events", "topic of the events (one partition)")
	fs.StringVar(&o.Output, "output", "results", "topic of the window results")
	fs.IntVar(&o.Containers, "containers", 2, "containers")
	fs.IntVar(&o.Parallelism, "parallelism", 2, "tasks of each window bolt")
	fs.DurationVar(&o.CheckpointInterval, "checkpoint-interval", 0, "checkpoint interval (0: the default)")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	os.Exit(runner.MainArgs(eowindows.Builder(o), rest, os.Stdout, os.Stderr))
}
