// Command windowedwc is the windowed word count benchmark topology: a
// spout emits words stamped with the wall clock (up to 250 ms out of
// order) and sends periodic in-band watermarks (bounded out-of-orderness
// 500 ms, every 200 ms); a window bolt counts each word per event-time
// window (10 s tumbling, or sliding with --slide), aggregating
// incrementally; a report bolt records, per result, the latency from the
// moment the watermark closed the window in the window bolt to the result
// reaching it (latency recorder "report").
//
//	go run ./bench/topologies/windowedwc --local --duration 30s
//	egret submit local ./windowedwc -- --rate 50000 --latency-dir /tmp/lat --slide 1s
//
// Its own flags: --containers N, --counts N (window bolt parallelism,
// default 1), --window D (default 10s), --slide D (sliding windows),
// --rate R (words per second; default: as fast as possible),
// --latency-dir DIR.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/bench/topologies/latency"
)

// words are the words of TVL's five sentences (the T3 corpus).
var words = []string{"the", "cow", "jumped", "over", "moon", "an", "apple", "a", "day", "keeps", "doctor", "away",
	"four", "score", "and", "seven", "years", "ago", "snow", "white", "dwarfs", "i", "am", "at", "two", "with", "nature"}

// ReportLatency names the report bolt's latency recorder.
const ReportLatency = "report"

type wordSpout struct {
	api.BaseSpout
	out   api.SpoutCollector
	rng   *rand.Rand
	rate  float64
	sent  int64
	start time.Time
}

func (s *wordSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	s.out = out
	s.rng = rand.New(rand.NewPCG(uint64(ctx.TaskID()), 1))
	if v := ctx.Config(latency.KeyRate); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%s: %w", latency.KeyRate, err)
		}
		s.rate = r / float64(len(ctx.ComponentTasks(ctx.ComponentName())))
	}
	s.start = time.Now()
	return nil
}

func (s *wordSpout) NextTuple() {
	now := time.Now()
	for i := 0; i < 64; i++ {
		if s.rate > 0 && float64(s.sent) >= now.Sub(s.start).Seconds()*s.rate {
			return
		}
		s.out.Emit(api.Values{words[s.rng.IntN(len(words))], now.UnixMilli() - s.rng.Int64N(250)}, nil)
		s.sent++
	}
}

func (s *wordSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("word", "ts") }

type reportBolt struct {
	api.BaseBolt
	rec *latency.Recorder
}

func (b *reportBolt) Prepare(ctx api.Context, _ api.BoltCollector) error {
	if dir := ctx.Config(latency.KeyDir); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("%s: %w", latency.KeyDir, err)
		}
		b.rec = latency.NewRecorder(dir, ReportLatency, ctx.TaskID())
	}
	return nil
}

func (b *reportBolt) Execute(t api.Tuple) {
	if b.rec == nil {
		return
	}
	if t.IsTick() {
		_ = b.rec.Flush(time.Now())
		return
	}
	b.rec.Record(time.Now(), t.Int64(4))
}

func (b *reportBolt) DeclareOutputFields(api.OutputDeclarer) {}

func main() {
	var containers, counts int
	var size, slide time.Duration
	var rate float64
	var dir string
	fs := flag.NewFlagSet("windowedwc", flag.ContinueOnError)
	fs.IntVar(&containers, "containers", 1, "containers")
	fs.IntVar(&counts, "counts", 1, "window bolt parallelism")
	fs.DurationVar(&size, "window", 10*time.Second, "window length")
	fs.DurationVar(&slide, "slide", 0, "slide (default: tumbling)")
	fs.Float64Var(&rate, "rate", 0, "words per second in total (0: unthrottled)")
	fs.StringVar(&dir, "latency-dir", "", "where the latency recorder writes")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	tb := api.NewTopologyBuilder("windowedwc").SetContainers(containers)
	if rate > 0 {
		tb.SetConfig(latency.KeyRate, strconv.FormatFloat(rate, 'f', -1, 64))
	}
	if dir != "" {
		tb.SetConfig(latency.KeyDir, dir)
	}
	wb := window.NewBuilder(tb)
	wb.SetSpout("word", func() api.Spout { return &wordSpout{} }, 1, window.SpoutWatermarks{
		Timestamp: func(_ string, v api.Values) time.Time { return time.UnixMilli(v[1].(int64)) },
		Generator: func() window.Generator { return window.BoundedOutOfOrderness(500 * time.Millisecond) },
	})
	assigner := window.Tumbling(size)
	if slide > 0 {
		assigner = window.Sliding(size, slide)
	}
	window.SetBolt(wb, "count", counts, window.Spec[string, struct{}, int64, int64]{
		Assigner:  assigner,
		Key:       func(t api.Tuple) string { return t.String(0) },
		Value:     func(api.Tuple) struct{} { return struct{}{} },
		Timestamp: func(t api.Tuple) time.Time { return time.UnixMilli(t.Int64(1)) },
		Aggregate: window.Count[struct{}](),
		Guarantee: window.AckOnAdd,
		Output: func(r window.Result[string, int64]) api.Values {
			return api.Values{r.Key, r.Window.Start, r.Window.End, r.Value, time.Now().UnixNano()}
		},
		OutputFields: []string{"word", "start", "end", "count", "fired"},
	}).FieldsGrouping("word", "word")
	tb.SetBolt("report", func() api.Bolt { return &reportBolt{} }, 1).GlobalGrouping("count").SetTickFrequency(time.Second)
	os.Exit(runner.MainArgs(tb, rest, os.Stdout, os.Stderr))
}
