// Command ackcheck is the at-least-once verification topology (see package
// ackcheck): a replayable spout of N numbered messages, a fan-out bolt, a
// relay bolt and a sink that records every tuple, with at-least-once
// delivery.
//
//	go run ./bench/topologies/ackcheck --messages 20000 --state /tmp/ack --local --duration 20s
//	egret submit local ./ackcheck -- --messages 20000 --state /tmp/ack
//
// Its own flags (given before Egret's, or after -- with egret submit):
//
//	--name NAME          topology name (default ackcheck)
//	--messages N         message ids 0..N-1 (0: unbounded)
//	--state DIR          the spouts' logs and the sinks' records (required)
//	--rate N             emits per second over all spout tasks (0: unlimited)
//	--max-pending N      max.spout.pending per spout task (default 1000)
//	--timeout D          message timeout (default 10s)
//	--containers N       containers in a cluster (default 2)
//	--copies N           tuples the fanout bolt emits per message (default 3)
//	--spouts N, --bolts N  parallelisms (default 2)
//	--no-sink-log        the sink acks without recording (benchmarks)
//	--set KEY=VALUE      a topology setting (repeatable)
package main

import (
	"fmt"
	"os"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
)

func main() {
	o, rest, err := ackcheck.ParseArgs("ackcheck", os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "ackcheck: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	b, err := ackcheck.Builder(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ackcheck: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}
