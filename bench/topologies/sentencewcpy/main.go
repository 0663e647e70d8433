// Command sentencewcpy is T3's sentence word count (see sentencewc) with
// the split bolt written in Python with pystorm (resources/split.py), to
// compare a multilang bolt with the all-Go topology. It takes the flags of
// sentencewc; --python-path names the virtualenv's bin directory
// (scripts/pyvenv.sh prints it):
//
//	egret submit --resources bench/topologies/sentencewcpy/resources local ./sentencewcpy -- \
//		--acking --max-pending 5000 --python-path ~/.cache/egret/pyvenv/bin
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
	o.Name = "sentencewcpy"
	o.ShellSplit = []string{"python3", "split.py"}
	b, err := sentencewc.Builder(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sentencewcpy: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}
