// Command join joins two streams with the streamlet API: ad impressions
// and ad clicks, keyed by ad, are joined within 1 s tumbling event-time
// windows (inner join by default; --kind left|right|outer), and every
// joined pair is printed as "joined AD IMPRESSION-MS CLICK-MS" ("-" for
// a missing side). Impression and Click are user structs: they cross
// processes through a registered JSON codec.
//
//	go run ./examples/join --local --events 1000 --duration 3s
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/api/streamlet"
	"github.com/egret-stream/egret/api/window"
)

// Impression is an ad shown at a time.
type Impression struct {
	Ad string
	At int64 // Unix ms
}

// Click is a click on an ad.
type Click struct {
	Ad string
	At int64
}

// EndAd marks the end of a bounded stream: an event an hour of event
// time later that moves the watermark past every window.
const EndAd = "~end"

// Epoch is the event time of the first events.
const Epoch = 1_700_000_000_000

// Events returns the impressions and clicks of a bounded run: ascending
// times with up to 100 ms of disorder, eight ads, fewer clicks than
// impressions.
func Events(n int) ([]Impression, []Click) {
	rng := rand.New(rand.NewPCG(7, 7))
	var imps []Impression
	var clicks []Click
	t := int64(Epoch)
	for i := 0; i < n; i++ {
		t += int64(rng.IntN(20))
		ad := fmt.Sprint("ad", rng.IntN(8))
		imps = append(imps, Impression{ad, t - rng.Int64N(100)})
		if rng.IntN(4) == 0 {
			clicks = append(clicks, Click{fmt.Sprint("ad", rng.IntN(8)), t - rng.Int64N(100)})
		}
	}
	end := t + time.Hour.Milliseconds()
	return append(imps, Impression{EndAd, end}), append(clicks, Click{EndAd, end})
}

// Kinds maps the --kind flag to join types.
var Kinds = map[string]streamlet.JoinType{"inner": streamlet.Inner, "left": streamlet.Left, "right": streamlet.Right, "outer": streamlet.FullOuter}

// Format prints a joined pair.
func Format(ad string, imp *Impression, click *Click) string {
	i, c := "-", "-"
	if imp != nil {
		i = fmt.Sprint(imp.At)
	}
	if click != nil {
		c = fmt.Sprint(click.At)
	}
	return fmt.Sprintf("joined %s %s %s", ad, i, c)
}

// Pipeline builds the join.
func Pipeline(n int, kind streamlet.JoinType) *streamlet.Builder {
	b := streamlet.New("join")
	b.RegisterType(1, Impression{}, streamlet.JSONCodec[Impression]{}).
		RegisterType(2, Click{}, streamlet.JSONCodec[Click]{})
	imps, clicks := Events(n)
	impressions := streamlet.Slice(b, "impressions", func(int) []Impression { return imps })
	clickStream := streamlet.Slice(b, "clicks", func(int) []Click { return clicks })
	joined := streamlet.Join(
		streamlet.KeyBy(impressions, func(i Impression) string { return i.Ad }).Named("impressions-by-ad"),
		streamlet.KeyBy(clickStream, func(c Click) string { return c.Ad }).Named("clicks-by-ad"),
		kind,
		streamlet.WindowConfig{Assigner: window.Tumbling(time.Second), Time: window.EventTime, MaxDelay: 200 * time.Millisecond},
		func(i Impression) time.Time { return time.UnixMilli(i.At) },
		func(c Click) time.Time { return time.UnixMilli(c.At) },
		Format,
	).Named("join").Parallelism(2)
	streamlet.Consume(streamlet.Filter(joined, func(s string) bool { return s[len("joined "):][:len(EndAd)] != EndAd }),
		func(s string) { fmt.Println(s) }).Named("print")
	return b
}

func main() {
	var n, containers int
	var kind string
	fs := flag.NewFlagSet("join", flag.ContinueOnError)
	fs.IntVar(&n, "events", 1000, "impressions in the bounded run")
	fs.StringVar(&kind, "kind", "inner", "join kind: inner, left, right or outer")
	fs.IntVar(&containers, "containers", 1, "containers in a cluster")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	k, ok := Kinds[kind]
	if !ok {
		fmt.Fprintf(os.Stderr, "--kind %q: want inner, left, right or outer\n", kind)
		os.Exit(runner.ExitUsage)
	}
	tb, err := Pipeline(n, k).Compile()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitFailure)
	}
	tb.SetContainers(containers)
	os.Exit(runner.MainArgs(tb, rest, os.Stdout, os.Stderr))
}
