// Package wordcount holds the components of the word count example topology,
// so that tests and benchmarks can build it too.
package wordcount

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
	// unbounded). It is stored in the topology config (KeyMaxSentences), so
	// it also reaches instances in a cluster.
	MaxSentences int
	// ReportDir, when set, makes the spouts and count bolts write their
	// per-word counts there as JSON files (KeyReportDir): sentence-<task>.json
	// once a bounded spout has finished, count-<task>.json at every tick.
	ReportDir string
	// Rate limits each spout task to this many sentences per second (0:
	// as fast as it can); KeyRate.
	Rate int
}

// Topology config keys of the example.
const (
	KeyMaxSentences = "wordcount.max.sentences"
	KeyReportDir    = "wordcount.report.dir"
	KeyRate         = "wordcount.rate"
)

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
	if o.MaxSentences > 0 {
		b.SetConfig(KeyMaxSentences, strconv.Itoa(o.MaxSentences))
	}
	if o.ReportDir != "" {
		b.SetConfig(KeyReportDir, o.ReportDir)
	}
	if o.Rate > 0 {
		b.SetConfig(KeyRate, strconv.Itoa(o.Rate))
	}
	b.SetSpout("sentence", func() api.Spout { return &SentenceSpout{} }, 1)
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
// the user counter "words". With KeyMaxSentences it stops after that many
// sentences.
type SentenceSpout struct {
	api.BaseSpout
	out     api.SpoutCollector
	rng     *rand.Rand
	words   *api.Counter
	max     int
	sent    int
	report  string
	emitted map[string]int64
	rate    int
	start   time.Time
}

// Open implements api.Spout.
func (s *SentenceSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	s.out = out
	s.rng = rand.New(rand.NewPCG(uint64(ctx.TaskID()), uint64(time.Now().UnixNano())))
	s.words = ctx.Counter("words")
	if v := ctx.Config(KeyMaxSentences); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%s: %q is not a number", KeyMaxSentences, v)
		}
		s.max = n
	}
	if dir := ctx.Config(KeyReportDir); dir != "" {
		s.report = filepath.Join(dir, fmt.Sprintf("sentence-%d.json", ctx.TaskID()))
		s.emitted = map[string]int64{}
	}
	if v := ctx.Config(KeyRate); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%s: %q is not a rate", KeyRate, v)
		}
		s.rate = n
	}
	s.start = time.Now()
	return nil
}

// NextTuple implements api.Spout.
func (s *SentenceSpout) NextTuple() {
	if s.max > 0 && s.sent >= s.max {
		return
	}
	if s.rate > 0 && float64(s.sent) >= time.Since(s.start).Seconds()*float64(s.rate) {
		return // ahead of the rate: emit nothing, the runtime backs off
	}
	sentence := Sentences[s.rng.IntN(len(Sentences))]
	s.out.Emit(api.Values{sentence}, nil)
	s.sent++
	s.words.Add(int64(strings.Count(sentence, " ") + 1))
	if s.emitted != nil {
		for _, w := range strings.Fields(sentence) {
			s.emitted[w]++
		}
		if s.sent == s.max {
			writeReport(s.report, s.emitted)
		}
	}
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
	report  string
}

// Prepare implements api.Bolt.
func (b *CountBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	b.counts = map[string]int64{}
	b.changed = map[string]bool{}
	b.counted = ctx.Counter("counted")
	if dir := ctx.Config(KeyReportDir); dir != "" {
		b.report = filepath.Join(dir, fmt.Sprintf("count-%d.json", ctx.TaskID()))
	}
	return nil
}

// Execute implements api.Bolt.
func (b *CountBolt) Execute(t api.Tuple) {
	if t.IsTick() {
		for w := range b.changed {
			b.out.Emit(api.Values{w, b.counts[w]})
		}
		// The report is rewritten on every tick, also without a change,
		// so that a report a previous instance of this task wrote while
		// it was stopping (the counts of before a restart) is replaced.
		if b.report != "" {
			writeReport(b.report, b.counts)
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

// writeReport writes counts as JSON to path atomically; errors are ignored
// (the report is for tests and demos).
func writeReport(path string, counts map[string]int64) {
	b, err := json.Marshal(counts)
	if err != nil {
		return
	}
	tmp := path + ".tmp"
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	if os.WriteFile(tmp, b, 0o644) == nil {
		_ = os.Rename(tmp, path)
	}
}

// ReadReports sums the per-word counts of the report files in dir whose
// names start with prefix ("sentence-" or "count-").
func ReadReports(dir, prefix string) (map[string]int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, prefix+"*.json"))
	if err != nil {
		return nil, err
	}
	total := map[string]int64{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var m map[string]int64
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for w, n := range m {
			total[w] += n
		}
	}
	return total, nil
}

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
