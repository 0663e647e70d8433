// Package wordcount holds the components of the word count example topology,
// so that tests and benchmarks can build it too.
package wordcount

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/egret-stream/egret/api"
)

// Sentences are the spout's corpus.
var Sentences = []string{
	"the cow jumped over the moon",
	"an apple a day keeps the doctor away",
	"four score and seven years ago",
	"snow white and the seven dwarfs",
	"i am at two with nature",
	"the quick brown fox jumps over the lazy dog",
	"stream processing at scale needs back pressure",
}

// Options tune the topology.
type Options struct {
	// SplitParallelism and CountParallelism default to 2.
	SplitParallelism, CountParallelism int
	// ReportEvery is the tick interval of the count bolts (default 1s).
	ReportEvery time.Duration
	// Out receives the report (default os.Stdout).
	Out io.Writer
	// MaxSentences stops the spout after this many sentences per task (0:
	// unbounded).
	MaxSentences int
}

// Builder returns the word count topology.
func Builder(o Options) *api.TopologyBuilder {
	if o.SplitParallelism == 0 {
		o.SplitParallelism = 2
	}
	if o.CountParallelism == 0 {
		o.CountParallelism = 2
	}
	if o.ReportEvery == 0 {
		o.ReportEvery = time.Second
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	b := api.NewTopologyBuilder("wordcount")
	b.SetSpout("sentence", func() api.Spout { return &SentenceSpout{Max: o.MaxSentences} }, 1)
	b.SetBolt("split", func() api.Bolt { return &SplitBolt{} }, o.SplitParallelism).
		ShuffleGrouping("sentence")
	b.SetBolt("count", func() api.Bolt { return &CountBolt{} }, o.CountParallelism).
		FieldsGrouping("split", "word").
		SetTickFrequency(o.ReportEvery)
	b.SetBolt("report", func() api.Bolt { return &ReportBolt{Out: o.Out} }, 1).
		GlobalGrouping("count")
	return b
}

// SentenceSpout emits random sentences and counts the words it emitted in
// the user counter "words".
type SentenceSpout struct {
	api.BaseSpout
	Max   int
	out   api.SpoutCollector
	rng   *rand.Rand
	words *api.Counter
	sent  int
}

// Open implements api.Spout.
func (s *SentenceSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	s.out = out
	s.rng = rand.New(rand.NewPCG(uint64(ctx.TaskID()), uint64(time.Now().UnixNano())))
	s.words = ctx.Counter("words")
	return nil
}

// NextTuple implements api.Spout.
func (s *SentenceSpout) NextTuple() {
	if s.Max > 0 && s.sent >= s.Max {
		return
	}
	sentence := Sentences[s.rng.IntN(len(Sentences))]
	s.out.Emit(api.Values{sentence}, nil)
	s.sent++
	s.words.Add(int64(strings.Count(sentence, " ") + 1))
}

// DeclareOutputFields implements api.Spout.
func (s *SentenceSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("sentence") }

// SplitBolt splits sentences into words.
type SplitBolt struct {
	api.BaseBolt
	out api.BoltCollector
}

// Prepare implements api.Bolt.
func (b *SplitBolt) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out = out
	return nil
}

// Execute implements api.Bolt.
func (b *SplitBolt) Execute(t api.Tuple) {
	for _, w := range strings.Fields(t.String(0)) {
		b.out.Emit(api.Values{w}, t)
	}
	b.out.Ack(t)
}

// DeclareOutputFields implements api.Bolt.
func (b *SplitBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("word") }

// CountBolt counts words; on every tick it emits the counts that changed
// since the last tick. The user counter "counted" is the number of words
// it received.
type CountBolt struct {
	api.BaseBolt
	out     api.BoltCollector
	counts  map[string]int64
	changed map[string]bool
	counted *api.Counter
}

// Prepare implements api.Bolt.
func (b *CountBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	b.counts = map[string]int64{}
	b.changed = map[string]bool{}
	b.counted = ctx.Counter("counted")
	return nil
}

// Execute implements api.Bolt.
func (b *CountBolt) Execute(t api.Tuple) {
	if t.IsTick() {
		for w := range b.changed {
			b.out.Emit(api.Values{w, b.counts[w]})
		}
		clear(b.changed)
		return
	}
	w := t.String(0)
	b.counts[w]++
	b.changed[w] = true
	b.counted.Inc()
	b.out.Ack(t)
}

// Counts returns the bolt's counts (for tests).
func (b *CountBolt) Counts() map[string]int64 { return b.counts }

// DeclareOutputFields implements api.Bolt.
func (b *CountBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("word", "count") }

// ReportBolt keeps the latest count of every word and prints the top ten
// when the topology stops.
type ReportBolt struct {
	api.BaseBolt
	Out    io.Writer
	counts map[string]int64
}

// Prepare implements api.Bolt.
func (b *ReportBolt) Prepare(api.Context, api.BoltCollector) error {
	b.counts = map[string]int64{}
	return nil
}

// Execute implements api.Bolt.
func (b *ReportBolt) Execute(t api.Tuple) {
	b.counts[t.String(0)] = t.Int64(1)
}

// Cleanup implements api.Bolt.
func (b *ReportBolt) Cleanup() {
	fmt.Fprintln(b.Out, "top words (as last reported by the count bolts):")
	for _, wc := range Top(b.counts, 10) {
		fmt.Fprintf(b.Out, "  %-12s %d\n", wc.Word, wc.Count)
	}
}

// DeclareOutputFields implements api.Bolt.
func (b *ReportBolt) DeclareOutputFields(api.OutputDeclarer) {}

// WordCount is one word and its count.
type WordCount struct {
	Word  string
	Count int64
}

// Top returns the n most frequent words, most frequent first.
func Top(counts map[string]int64, n int) []WordCount {
	out := make([]WordCount, 0, len(counts))
	for w, c := range counts {
		out = append(out, WordCount{w, c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Word < out[j].Word
	})
	return out[:min(n, len(out))]
}
