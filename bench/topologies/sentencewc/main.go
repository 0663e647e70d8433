// Command sentencewc is Egret's sentence word count benchmark topology
// (T3, after storm-loadgen's ThroughputVsLatency): a spout emits TVL's five
// sentences, a split bolt (local-or-shuffle) splits them into words, a
// count bolt (fields grouping on the word) counts them. At a fixed offered
// rate every sentence carries its scheduled emit time and the count bolt
// records the latency from it (see bench/topologies/latency).
//
//	go run ./bench/topologies/sentencewc --local --duration 10s --acking
//	egret submit local ./sentencewc -- --acking --max-pending 5000 --rate 20000 --latency-dir /tmp/lat
//
// Its own flags (given before Egret's, or after -- with egret submit):
//
//	--spouts N, --splits N, --counts N   parallelism (default 1 each)
//	--containers N                       containers (default 1)
//	--acking                             at-least-once
//	--max-pending N                      topology.max.spout.pending with --acking
//	--rate R                             offered sentences per second in total (default: unthrottled)
//	--latency-dir DIR                    where the latency recorders write (with --rate)
//	--container-mode M                   topology.container.mode (default: process-per-instance)
package main

import (
	"fmt"
	"os"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/bench/topologies/sentencewc/sentencewc"
)

func main() {
	o, rest, err := sentencewc.ParseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	b, err := sentencewc.Builder(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentencewc: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}
