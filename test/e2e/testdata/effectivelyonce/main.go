// Command effectivelyonce is the effectively-once verification topology
// (see package eocount): a stateful word count over N known sentences.
//
//	egret submit local ./effectivelyonce -- --sentences 20000 --state /tmp/eo --rate 4000
package main

import (
	"fmt"
	"os"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/bench/topologies/eocount/eocount"
)

func main() {
	o, rest, err := eocount.ParseArgs("eocount", os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "effectivelyonce: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	b, err := eocount.Builder(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "effectivelyonce: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}
