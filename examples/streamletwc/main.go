// Command streamletwc is word count written with the streamlet API:
// sentences are split, cleaned and keyed by word, and counted per word in
// processing-time tumbling windows; every final count is printed as
// "count WORD N START".
//
//	go run ./examples/streamletwc --local --duration 10s
//	go run ./examples/streamletwc --local --sentences 1000
//	egret submit local ./examples/streamletwc -- --containers 2
//
// The source, split, filter and lower-case stages fuse into one spout
// component ("sentences_split_nonempty_lower_by-word"); the windowed count
// is its own component. Flags: --sentences N (per source task, default
// unbounded), --window D (default 1s), --containers N, --separate (no
// fusing).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/api/streamlet"
	"github.com/egret-stream/egret/api/window"
)

// Sentences is the corpus; source task i emits Sentences[(i+j)%len] as
// its j-th sentence.
var Sentences = []string{
	"The cow jumped over the moon",
	"an apple a day keeps the doctor away",
	"Four score and seven years ago",
	"snow white and the seven dwarfs",
	"  i am at two with nature  ",
}

// Pipeline builds the word count.
func Pipeline(sentences int, every time.Duration, separate bool) *streamlet.Builder {
	b := streamlet.New("streamletwc")
	if separate {
		b.DisableFusing()
	}
	src := streamlet.Source(b, "sentences", func(ctx api.Context) streamlet.Supplier[string] {
		task, n := ctx.TaskIndex(), 0
		return func() (string, bool) {
			if sentences > 0 && n >= sentences {
				return "", false
			}
			n++
			return Sentences[(task+n-1)%len(Sentences)], true
		}
	}).Parallelism(2)
	words := streamlet.FlatMap(src, strings.Fields).Named("split")
	words = streamlet.Filter(words, func(w string) bool { return w != "" }).Named("nonempty")
	words = streamlet.Map(words, strings.ToLower).Named("lower")
	keyed := streamlet.KeyBy(words, func(w string) string { return w }).Named("by-word")
	counts := streamlet.ReduceByKeyAndWindow(keyed, streamlet.WindowConfig{Assigner: window.Tumbling(every), Time: window.ProcessingTime},
		nil, window.Count[string]()).Named("count").Parallelism(2)
	streamlet.Consume(counts, func(r streamlet.Windowed[string, int64]) {
		fmt.Printf("count %s %d %d\n", r.Key, r.Value, r.Window.Start)
	}).Named("print")
	return b
}

func main() {
	var sentences, containers int
	var every time.Duration
	var separate bool
	fs := flag.NewFlagSet("streamletwc", flag.ContinueOnError)
	fs.IntVar(&sentences, "sentences", 0, "sentences per source task (0: unbounded)")
	fs.DurationVar(&every, "window", time.Second, "window length")
	fs.IntVar(&containers, "containers", 1, "containers in a cluster")
	fs.BoolVar(&separate, "separate", false, "one component per stage (no fusing)")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	tb, err := Pipeline(sentences, every, separate).Compile()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitFailure)
	}
	tb.SetContainers(containers)
	os.Exit(runner.MainArgs(tb, rest, os.Stdout, os.Stderr))
}
