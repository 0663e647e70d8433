// Command constnull is Egret's ConstSpoutNullBolt benchmark topology (T1,
// after storm-perf's ConstSpoutNullBoltTopo): a spout emits a fixed small
// tuple (an int64 sequence number and the string "some data") as fast as
// the runtime lets it, into a bolt that only counts what it receives.
// The grouping is shuffle. Acking is off (at-most-once) unless --acking:
// then the spout's sequence number is the message id, the bolt acks every
// tuple and the spout counts the acks in the user counter "acked".
//
//	go run ./bench/topologies/constnull --local --duration 10s
//	egret submit local ./constnull -- --containers 2 --spouts 1 --bolts 1
//
// Its own flags (given before Egret's, or after -- with egret submit):
//
//	--containers N   containers in a cluster (default 2)
//	--spouts N       spout parallelism (default 1)
//	--bolts N        bolt parallelism (default 1)
//	--acking         at-least-once: tracked tuples, acked by the bolt
//	--max-pending N  topology.max.spout.pending with --acking (default: the runtime's)
//	--container-mode M  topology.container.mode (default: process-per-instance)
//
// The runtime's own counters measure it: instance.emitted of the spout and
// instance.executed of the bolt (see bench/harness).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/bench/topologies/constnull/constnull"
)

func main() {
	var o constnull.Options
	fs := flag.NewFlagSet("constnull", flag.ContinueOnError)
	fs.IntVar(&o.Containers, "containers", 2, "containers in a cluster")
	fs.IntVar(&o.Spouts, "spouts", 1, "spout parallelism")
	fs.IntVar(&o.Bolts, "bolts", 1, "bolt parallelism")
	fs.BoolVar(&o.Acking, "acking", false, "at-least-once: the spout tracks every tuple and the bolt acks it")
	fs.IntVar(&o.MaxPending, "max-pending", 0, "topology.max.spout.pending with --acking (0: the runtime's default)")
	fs.StringVar(&o.ContainerMode, "container-mode", "", "topology.container.mode (default: the runtime's, process-per-instance)")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	b, err := constnull.Builder(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "constnull: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}
