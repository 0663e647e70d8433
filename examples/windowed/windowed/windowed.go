// Package windowed holds the windowed word count example: a spout emits
// words with event times, out of order and some late; window bolts count
// each word per event-time window (tumbling, or sliding), closed by
// in-band watermarks; a report bolt prints every final count and every
// late word.
package windowed

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/core/topology"
)

// Words is the spout's vocabulary.
var Words = []string{"apple", "banana", "cherry", "date", "elder", "fig", "grape", "kiwi", "lemon", "mango"}

// Epoch is the event time of the first word (Unix ms).
const Epoch = 1_700_000_000_000

// EndWord is emitted once after a bounded spout's last word, an hour of
// event time later, so the watermark passes every window; it is not
// reported.
const EndWord = "~end"

// Options tune the topology.
type Options struct {
	// Words stops each spout task after this many words (0: unbounded).
	Words int
	// Window is the window length (default 10s); Slide, when set, makes
	// the windows sliding.
	Window, Slide time.Duration
	// MaxDelay is how far out of order words are (default 500ms); the
	// watermark trails the largest timestamp by it.
	MaxDelay time.Duration
	// LateEvery makes every n-th word late by 2–5 s (default 50; negative:
	// none).
	LateEvery int
	// Seed seeds the spout's generator (default 1).
	Seed int64
	// Count is the window bolt parallelism (default 2).
	Count int
	// Out receives the report (default os.Stdout).
	Out io.Writer
	// Quiet reports nothing (for benchmarks).
	Quiet bool
	// ReportDir, when set, makes the report bolt also append its lines to
	// DIR/report-TASK.txt (for tests on a cluster, where stdout goes to
	// the instance logs).
	ReportDir string
}

// Config keys the options travel under to instances in a cluster.
const (
	keyWords = "windowed.words"
	keyDelay = "windowed.max.delay"
	keyLate  = "windowed.late.every"
	keySeed  = "windowed.seed"
	keyQuiet = "windowed.quiet"
	keyDir   = "windowed.report.dir"
)

func (o *Options) defaults() {
	if o.Window == 0 {
		o.Window = 10 * time.Second
	}
	if o.MaxDelay == 0 {
		o.MaxDelay = 500 * time.Millisecond
	}
	if o.LateEvery == 0 {
		o.LateEvery = 50
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Count == 0 {
		o.Count = 2
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
}

// Builder returns the windowed word count topology.
func Builder(o Options) *api.TopologyBuilder {
	o.defaults()
	tb := api.NewTopologyBuilder("windowed")
	tb.SetConfig(keyWords, strconv.Itoa(o.Words)).
		SetConfig(keyDelay, o.MaxDelay.String()).
		SetConfig(keyLate, strconv.Itoa(o.LateEvery)).
		SetConfig(keySeed, strconv.FormatInt(o.Seed, 10)).
		SetConfig(keyQuiet, strconv.FormatBool(o.Quiet)).
		SetConfig(keyDir, o.ReportDir)
	wb := window.NewBuilder(tb)
	delay := o.MaxDelay
	wb.SetSpout("words", func() api.Spout { return &WordSpout{} }, 1, window.SpoutWatermarks{
		Timestamp: func(_ string, v api.Values) time.Time { return time.UnixMilli(v[1].(int64)) },
		Generator: func() window.Generator { return window.BoundedOutOfOrderness(delay) },
		Emission:  window.PerRecord,
	})
	assigner := window.Tumbling(o.Window)
	if o.Slide > 0 {
		assigner = window.Sliding(o.Window, o.Slide)
	}
	window.SetBolt(wb, "count", o.Count, window.Spec[string, struct{}, int64, int64]{
		Assigner:   assigner,
		Key:        func(t api.Tuple) string { return t.String(0) },
		Value:      func(api.Tuple) struct{} { return struct{}{} },
		Timestamp:  func(t api.Tuple) time.Time { return time.UnixMilli(t.Int64(1)) },
		Aggregate:  window.Count[struct{}](),
		LateStream: true,
		// Words of a bounded run are all emitted within seconds; a long
		// idle timeout keeps the single spout from being marked idle
		// under load, which would not change results but is clearer.
		IdleTimeout: time.Minute,
	}).FieldsGrouping("words", "word")
	out := o.Out
	tb.SetBolt("report", func() api.Bolt { return &ReportBolt{Out: out} }, 1).
		GlobalGrouping("count").
		Input("count", window.LateStream, api.Global())
	return tb
}

// Event is one word the spout emits.
type Event struct {
	Word string
	TS   int64
}

// Events returns what spout task index emits with these options (the
// same sequence in every run).
func Events(o Options, index int) []Event {
	o.defaults()
	rng := rand.New(rand.NewPCG(uint64(o.Seed), uint64(index)))
	delay := o.MaxDelay.Milliseconds()
	ev := int64(Epoch)
	var out []Event
	for i := 0; o.Words == 0 || i < o.Words; i++ {
		ev += int64(rng.IntN(20))
		ts := ev - rng.Int64N(delay+1)
		if o.LateEvery > 0 && i%o.LateEvery == o.LateEvery-1 {
			ts = ev - 2000 - rng.Int64N(3000)
		}
		out = append(out, Event{Words[rng.IntN(len(Words))], ts})
		if o.Words == 0 && len(out) >= 1<<16 {
			break // Events is for bounded runs; the spout generates on the fly
		}
	}
	return append(out, Event{EndWord, ev + time.Hour.Milliseconds()})
}

// WordSpout emits words with event times.
type WordSpout struct {
	api.BaseSpout
	out       api.SpoutCollector
	rng       *rand.Rand
	max, sent int
	delay, ev int64
	lateEvery int
	done      bool
}

// Open implements api.Spout.
func (s *WordSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	s.out = out
	var err error
	if s.max, err = strconv.Atoi(ctx.Config(keyWords)); err != nil {
		return fmt.Errorf("%s: %w", keyWords, err)
	}
	d, err := time.ParseDuration(ctx.Config(keyDelay))
	if err != nil {
		return fmt.Errorf("%s: %w", keyDelay, err)
	}
	s.delay = d.Milliseconds()
	if s.lateEvery, err = strconv.Atoi(ctx.Config(keyLate)); err != nil {
		return fmt.Errorf("%s: %w", keyLate, err)
	}
	seed, err := strconv.ParseInt(ctx.Config(keySeed), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %w", keySeed, err)
	}
	s.rng = rand.New(rand.NewPCG(uint64(seed), uint64(ctx.TaskIndex())))
	s.ev = Epoch
	return nil
}

// NextTuple implements api.Spout; it follows Events exactly.
func (s *WordSpout) NextTuple() {
	if s.done {
		return
	}
	if s.max > 0 && s.sent >= s.max {
		s.out.Emit(api.Values{EndWord, s.ev + time.Hour.Milliseconds()}, nil)
		s.done = true
		return
	}
	s.ev += int64(s.rng.IntN(20))
	ts := s.ev - s.rng.Int64N(s.delay+1)
	if s.lateEvery > 0 && s.sent%s.lateEvery == s.lateEvery-1 {
		ts = s.ev - 2000 - s.rng.Int64N(3000)
	}
	s.out.Emit(api.Values{Words[s.rng.IntN(len(Words))], ts}, s.sent)
	s.sent++
}

// DeclareOutputFields implements api.Spout.
func (s *WordSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("word", "ts") }

// ReportBolt prints "final WORD START END COUNT" for every final window
// result and "late WORD TS" for every late word.
type ReportBolt struct {
	api.BaseBolt
	Out   io.Writer
	out   api.BoltCollector
	quiet bool
	file  *os.File
}

// Prepare implements api.Bolt.
func (b *ReportBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	b.quiet = ctx.Config(keyQuiet) == "true"
	if dir := ctx.Config(keyDir); dir != "" {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("report-%d.txt", ctx.TaskID())), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("report file: %w", err)
		}
		b.file = f
		b.Out = io.MultiWriter(b.Out, f)
	}
	return nil
}

// Cleanup implements api.Bolt.
func (b *ReportBolt) Cleanup() {
	if b.file != nil {
		_ = b.file.Close()
	}
}

// Execute implements api.Bolt.
func (b *ReportBolt) Execute(t api.Tuple) {
	defer b.out.Ack(t)
	if b.quiet {
		return
	}
	switch t.SourceStream() {
	case window.LateStream:
		vals, _ := t.Value(3).([]any)
		if len(vals) > 0 {
			fmt.Fprintf(b.Out, "late %v %d\n", vals[0], t.Int64(2))
		}
	case topology.DefaultStream:
		if w := t.String(0); w != EndWord && t.String(4) == window.Final.String() {
			fmt.Fprintf(b.Out, "final %s %d %d %d\n", w, t.Int64(1), t.Int64(2), t.Int64(3))
		}
	}
}

// DeclareOutputFields implements api.Bolt.
func (b *ReportBolt) DeclareOutputFields(api.OutputDeclarer) {}

// Expected computes what a bounded run reports: the final count of every
// window and word, as "WORD START END COUNT", and the late words as
// "WORD TS", by replaying the one spout task's events against its
// per-record watermark (each word is judged against the watermark that
// its predecessors moved).
func Expected(o Options) (finals map[string]bool, late []string) {
	o.defaults()
	size, slide := o.Window.Milliseconds(), o.Window.Milliseconds()
	if o.Slide > 0 {
		slide = o.Slide.Milliseconds()
	}
	counts := map[string]int64{}
	wm, maxTS := int64(-1<<63), int64(-1<<63)
	for _, e := range Events(o, 0) {
		if e.Word != EndWord {
			accepted := false
			for s := e.TS - e.TS%slide; s > e.TS-size; s -= slide {
				if s+size-1 > wm {
					accepted = true
					counts[fmt.Sprintf("%s %d %d", e.Word, s, s+size)]++
				}
			}
			if !accepted {
				late = append(late, fmt.Sprintf("%s %d", e.Word, e.TS))
			}
		}
		maxTS = max(maxTS, e.TS)
		wm = maxTS - o.MaxDelay.Milliseconds() - 1
	}
	finals = map[string]bool{}
	for k, n := range counts {
		finals[fmt.Sprintf("%s %d", k, n)] = true
	}
	return finals, late
}
