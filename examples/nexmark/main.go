// Command nexmark runs the Nexmark benchmark's queries on Egret: the
// generator's events (package generator) from a spout (package source)
// into one query (package queries). docs/nexmark.md describes the
// generator and every query's plan.
//
//	go run ./examples/nexmark --query q5 --events 1000000 --local
//	egret submit local ./nexmark -- --query q5 --events 100000000
//
// Its own flags (before Egret's, or after -- with egret submit):
//
//	--query Q            the query, q0 ... q22 (required)
//	--events N           events of the run, all source tasks together (0: unbounded)
//	--seed S             the generator's seed (default 1)
//	--event-rate R       events per second of event time (default 10,000,000)
//	--rate R             emission rate, events per second of wall-clock time (0: unthrottled)
//	--out-of-order G     permute the ids of every G consecutive events (default 1: in order)
//	--parallelism P      tasks of the source and of each operator that allows more than one
//	--sink print|count   print every result row to stdout, or only count them (default count)
//	--delivery M         at-most-once, at-least-once or effectively-once (default at-least-once)
//	--checkpoint-interval D   with effectively-once (default 10s)
//	--container-mode M   topology.container.mode (default: the runtime's)
//	--containers N       containers in a cluster (default 1)
//	--side-input F       q13's side input file (key<TAB>value lines; default: generated)
//	--q10-dir D          q10's output directory (a local path or hdfs://...)
//
// In a container the binary runs without these flags: the topology it is
// asked to run comes from the submitted definition, and every component
// reads its settings from the topology's configuration.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/examples/nexmark/generator"
	"github.com/egret-stream/egret/examples/nexmark/queries"
	"github.com/egret-stream/egret/examples/nexmark/source"
)

type options struct {
	query, sink, delivery, containerMode string
	events                               int64
	seed                                 uint64
	eventRate, rate                      float64
	outOfOrder                           int64
	parallelism, containers              int
	checkpoint                           time.Duration
	sideInput, q10Dir                    string
}

func main() {
	var o options
	fs := flag.NewFlagSet("nexmark", flag.ContinueOnError)
	fs.StringVar(&o.query, "query", "", "the query: "+strings.Join(queries.Names(), ", "))
	fs.Int64Var(&o.events, "events", 0, "events of the run, all source tasks together (0: unbounded)")
	fs.Uint64Var(&o.seed, "seed", 1, "the generator's seed")
	fs.Float64Var(&o.eventRate, "event-rate", 10_000_000, "events per second of event time")
	fs.Float64Var(&o.rate, "rate", 0, "emission rate in events per second of wall-clock time (0: unthrottled)")
	fs.Int64Var(&o.outOfOrder, "out-of-order", 1, "permute the ids of every this many consecutive events")
	fs.IntVar(&o.parallelism, "parallelism", 1, "tasks of the source and of each operator that allows more than one")
	fs.StringVar(&o.sink, "sink", "count", "print: print every result row; count: only count them")
	fs.StringVar(&o.delivery, "delivery", string(topology.AtLeastOnce), "delivery mode")
	fs.DurationVar(&o.checkpoint, "checkpoint-interval", 10*time.Second, "checkpoint interval with effectively-once")
	fs.StringVar(&o.containerMode, "container-mode", "", "topology.container.mode (default: the runtime's)")
	fs.IntVar(&o.containers, "containers", 1, "containers in a cluster")
	fs.StringVar(&o.sideInput, "side-input", "", "q13's side input file (default: generated)")
	fs.StringVar(&o.q10Dir, "q10-dir", "", "q10's output directory")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	if runner.InContainer(rest) {
		// The submitted definition says which query runs: offer the
		// components of all of them.
		tb := api.NewTopologyBuilder("nexmark")
		for _, name := range queries.Names() {
			queries.Add(tb, queries.All[name], 1)
		}
		os.Exit(runner.MainArgs(tb, rest, os.Stdout, os.Stderr))
	}
	tb, err := build(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nexmark: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	os.Exit(runner.MainArgs(tb, rest, os.Stdout, os.Stderr))
}

func build(o options) (*api.TopologyBuilder, error) {
	q, ok := queries.All[o.query]
	if !ok {
		return nil, fmt.Errorf("--query %q: want one of %s", o.query, strings.Join(queries.Names(), ", "))
	}
	if o.sink != "print" && o.sink != "count" {
		return nil, fmt.Errorf("--sink %q: want print or count", o.sink)
	}
	if o.parallelism < 1 || o.containers < 1 {
		return nil, fmt.Errorf("--parallelism %d and --containers %d must be at least 1", o.parallelism, o.containers)
	}
	st := source.Settings{Events: o.events, Rate: o.rate, Gen: generator.Default()}
	st.Gen.Seed, st.Gen.Rate, st.Gen.OutOfOrderGroupSize = o.seed, o.eventRate, o.outOfOrder
	if err := st.Gen.Validate(); err != nil {
		return nil, err
	}
	if o.events < 0 || o.rate < 0 {
		return nil, fmt.Errorf("--events %d and --rate %v must not be negative", o.events, o.rate)
	}
	tb := api.NewTopologyBuilder("nexmark-" + q.Name)
	for k, v := range st.Config() {
		tb.SetConfig(k, v)
	}
	tb.SetConfig(queries.KeySink, o.sink)
	if o.sideInput != "" {
		tb.SetConfig(queries.KeySideInput, o.sideInput)
	}
	if o.q10Dir != "" {
		tb.SetConfig(queries.KeyQ10Dir, o.q10Dir)
	}
	tb.SetContainers(o.containers)
	switch m := topology.DeliveryMode(o.delivery); m {
	case topology.AtMostOnce, topology.AtLeastOnce:
		tb.SetDeliveryMode(m)
	case topology.EffectivelyOnce:
		tb.SetDeliveryMode(m)
		tb.SetConfig(topology.KeyCheckpointInterval, o.checkpoint.String())
	default:
		return nil, fmt.Errorf("--delivery %q: want %s, %s or %s", o.delivery, topology.AtMostOnce, topology.AtLeastOnce, topology.EffectivelyOnce)
	}
	if o.containerMode != "" {
		tb.SetContainerMode(topology.ContainerMode(o.containerMode))
	}
	queries.Add(tb, q, o.parallelism)
	return tb, nil
}
