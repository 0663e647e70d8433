// Command windowed is the windowed word count example: words with event
// times (out of order, every 50th late) are counted per word in 10 s
// tumbling event-time windows (or sliding with --slide), closed by
// watermarks that travel in-band from the spout; the report bolt prints
// each final count and each late word.
//
//	go run ./examples/windowed --local --words 20000
//	go run ./examples/windowed --local --window 10s --slide 1s
//	egret submit local ./examples/windowed -- --containers 2 --words 20000
//
// Its own flags (before Egret's, or after -- with egret submit):
//
//	--words N        words per spout task, then an end marker (default: unbounded)
//	--window D       window length (default 10s)
//	--slide D        slide of sliding windows (default: tumbling)
//	--max-delay D    out-of-orderness of the words (default 500ms)
//	--late-every N   every N-th word is late (default 50)
//	--count N        window bolt parallelism (default 2)
//	--containers N   containers in a cluster (default 1)
//	--report-dir DIR also append the report to DIR/report-TASK.txt
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/examples/windowed/windowed"
)

func main() {
	var o windowed.Options
	var containers int
	fs := flag.NewFlagSet("windowed", flag.ContinueOnError)
	fs.IntVar(&o.Words, "words", 0, "words per spout task (0: unbounded)")
	fs.DurationVar(&o.Window, "window", 0, "window length (default 10s)")
	fs.DurationVar(&o.Slide, "slide", 0, "slide of sliding windows (default: tumbling)")
	fs.DurationVar(&o.MaxDelay, "max-delay", 0, "out-of-orderness of the words (default 500ms)")
	fs.IntVar(&o.LateEvery, "late-every", 0, "every n-th word is late (default 50; negative: none)")
	fs.IntVar(&o.Count, "count", 2, "window bolt parallelism")
	fs.IntVar(&containers, "containers", 1, "containers in a cluster")
	fs.StringVar(&o.ReportDir, "report-dir", "", "also append the report to files in this directory")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	b := windowed.Builder(o)
	b.SetContainers(containers)
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}
