// Command eoshell is the eocount topology (test/e2e/testdata/effectivelyonce)
// with its split bolt run by a Python subprocess (pystorm, split.py in the
// resources directory shipped with --resources): a shell bolt, which
// effectively-once refuses unless --stateless-split marks it stateless.
// The choice is made here, not by a flag, because the instances build the
// topology without the topology's flags.
package main

import (
	"fmt"
	"os"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/bench/topologies/eocount/eocount"
)

func main() {
	o, rest, err := eocount.ParseArgs("eoshell", os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "eoshell: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	o.ShellSplit = true
	b, err := eocount.Builder(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "eoshell: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}
