// Command pysplit is a sentence word count whose split bolt is a Python
// (pystorm) subprocess (resources/split.py): a spout paced at --rate
// sentences per second counts the words it sends (user counter
// sentences.words), the count bolt the words it receives (count.words).
// A run that loses no tuple queued toward or inside the subprocess ends
// with both equal.
//
//	pysplit --rate 1000 --python-path ~/.cache/egret/pyvenv/bin \
//		--resources test/e2e/testdata/pysplit/resources --local --duration 5s
package main

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/core/topology"
)

const keyRate = "pysplit.rate"

var sentences = []string{
	"the cow jumped over the moon",
	"an apple a day keeps the doctor away",
	"four score and seven years ago",
	"snow white and the seven dwarfs",
	"i am at two with nature",
}

func main() {
	fs := flag.NewFlagSet("pysplit", flag.ContinueOnError)
	rate := fs.Int("rate", 1000, "sentences per second")
	delay := fs.Duration("split-delay", 0, "how long the Python split bolt takes per sentence")
	pyPath := fs.String("python-path", "", "topology.multilang.path (a virtualenv's bin with pystorm)")
	fail := fs.String("fail", "", "make the split bolt fail: import (a missing module when it initializes), or a word (a ValueError at a sentence holding it)")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		os.Exit(runner.ExitUsage)
	}
	b := api.NewTopologyBuilder("pysplit")
	if *pyPath != "" {
		b.SetConfig(topology.KeyMultilangPath, *pyPath)
	}
	b.SetConfig(keyRate, strconv.Itoa(*rate))
	// The instances read the definition's settings, not these flags.
	if *fail != "" {
		b.SetConfig("pysplit.fail", *fail)
	}
	if *delay > 0 {
		b.SetConfig("pysplit.split.delay.ms", strconv.FormatFloat(float64(*delay)/float64(time.Millisecond), 'f', -1, 64))
	}
	b.SetSpout("sentences", func() api.Spout { return &sentenceSpout{} }, 1)
	b.SetShellBolt("split", api.ShellBolt("python3", "split.py").Declare("word"), 2).ShuffleGrouping("sentences")
	b.SetBolt("count", func() api.Bolt { return &countBolt{} }, 2).FieldsGrouping("split", "word")
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}

type sentenceSpout struct {
	api.BaseSpout
	out   api.SpoutCollector
	words *api.Counter
	rate  float64
	start time.Time
	sent  int
}

func (s *sentenceSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("sentence") }

func (s *sentenceSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	s.out, s.words, s.start = out, ctx.Counter("words"), time.Now()
	r, err := strconv.Atoi(ctx.Config(keyRate))
	s.rate = float64(r)
	return err
}

func (s *sentenceSpout) NextTuple() {
	if s.rate > 0 && float64(s.sent) >= time.Since(s.start).Seconds()*s.rate {
		return
	}
	line := sentences[s.sent%len(sentences)]
	s.sent++
	s.out.Emit(api.Values{line}, nil)
	s.words.Add(int64(len(strings.Fields(line))))
}

type countBolt struct {
	api.BaseBolt
	words *api.Counter
}

func (b *countBolt) Prepare(ctx api.Context, _ api.BoltCollector) error {
	b.words = ctx.Counter("words")
	return nil
}

func (b *countBolt) Execute(api.Tuple) { b.words.Inc() }

func (*countBolt) DeclareOutputFields(api.OutputDeclarer) {}
