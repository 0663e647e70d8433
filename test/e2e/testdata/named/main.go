// Command named is a one-spout topology under the name given with --name,
// for the end-to-end test that submit refuses an invalid topology name
// before anything is uploaded, written or started.
package main

import (
	"flag"
	"fmt"
	"os"

	api "github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/examples/wordcount/wordcount"
)

func main() {
	fs := flag.NewFlagSet("named", flag.ContinueOnError)
	name := fs.String("name", "named", "topology name")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	b := api.NewTopologyBuilder(*name)
	b.SetSpout("sentence", func() api.Spout { return &wordcount.SentenceSpout{} }, 1)
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}
