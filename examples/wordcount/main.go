// Command wordcount is Egret's classic example: a spout emits random
// sentences, a split bolt cuts them into words, and a count bolt keeps a
// running count per word, grouped by word so each word is counted by one
// task. Every second the count bolts send their changed counts to a single
// report bolt, which prints the top words when the topology stops.
//
//	go run ./examples/wordcount --local --duration 10s
//	egret submit local ./examples/wordcount -- --sentences 100000 --count 4
//
// Its own flags (given before Egret's, or after -- with egret submit):
//
//	--sentences N      stop the spout after N sentences (default: unbounded)
//	--split N          split bolt parallelism (default 2)
//	--count N          count bolt parallelism (default 2)
//	--containers N     containers in a cluster (default 1)
//	--report-dir DIR   write per-word counts to DIR (see wordcount.Options)
//	--rate N           at most N sentences per second per spout task
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/examples/wordcount/wordcount"
)

func main() {
	var o wordcount.Options
	var containers int
	fs := flag.NewFlagSet("wordcount", flag.ContinueOnError)
	fs.IntVar(&o.MaxSentences, "sentences", 0, "stop the spout after this many sentences")
	fs.IntVar(&o.SplitParallelism, "split", 2, "split bolt parallelism")
	fs.IntVar(&o.CountParallelism, "count", 2, "count bolt parallelism")
	fs.IntVar(&containers, "containers", 1, "containers in a cluster")
	fs.StringVar(&o.ReportDir, "report-dir", "", "write per-word counts to this directory")
	fs.IntVar(&o.Rate, "rate", 0, "sentences per second per spout task (0: as fast as possible)")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	b := wordcount.Builder(o)
	b.SetContainers(containers)
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}
