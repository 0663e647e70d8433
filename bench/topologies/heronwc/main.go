// Command heronwc is Egret's Heron word count benchmark topology (T2,
// after Heron's WordCountTopology): spouts emit words picked uniformly
// from 128×1024 random 20-character words, fields-grouped into count
// bolts that count them in a map. Unthrottled.
//
//	go run ./bench/topologies/heronwc --local --duration 10s
//	egret submit local ./heronwc -- --parallelism 2
//
// Its own flags (given before Egret's, or after -- with egret submit):
//
//	--parallelism N  spout and count tasks (default 1)
//	--containers N   containers (default: the parallelism)
//	--acking         at-least-once: tracked words, acked by the count bolt
//	--max-pending N  topology.max.spout.pending with --acking
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/bench/topologies/heronwc/heronwc"
)

func main() {
	var o heronwc.Options
	fs := flag.NewFlagSet("heronwc", flag.ContinueOnError)
	fs.IntVar(&o.Parallelism, "parallelism", 1, "spout and count tasks")
	fs.IntVar(&o.Containers, "containers", 0, "containers (default: the parallelism)")
	fs.BoolVar(&o.Acking, "acking", false, "at-least-once: the spout tracks every word and the count bolt acks it")
	fs.IntVar(&o.MaxPending, "max-pending", 0, "topology.max.spout.pending with --acking (0: the runtime's default)")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	b, err := heronwc.Builder(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "heronwc: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}
