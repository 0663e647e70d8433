package wordcount

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/daemons/instance/inproc"
)

// sentenceLog records the sentences the spout emitted.
type sentenceLog struct {
	mu        sync.Mutex
	sentences []string
	want      int
	done      chan struct{}
}

// recordingCollector passes emits through and logs them.
type recordingCollector struct {
	api.SpoutCollector
	log *sentenceLog
}

func (c *recordingCollector) Emit(values api.Values, msgID any) {
	c.SpoutCollector.Emit(values, msgID)
	c.log.mu.Lock()
	defer c.log.mu.Unlock()
	c.log.sentences = append(c.log.sentences, values[0].(string))
	if len(c.log.sentences) == c.log.want {
		close(c.log.done)
	}
}

// loggedSpout wraps the real spout to log what it emits.
type loggedSpout struct {
	api.Spout
	log *sentenceLog
}

func (s *loggedSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	return s.Spout.Open(ctx, &recordingCollector{SpoutCollector: out, log: s.log})
}

func TestWordCountCountsExactly(t *testing.T) {
	const sentences = 2000
	var report bytes.Buffer
	// No tick during the run: tuples that tick-driven bolts emit while the
	// runner shuts down are dropped (and counted), which would make the
	// drop check below depend on timing.
	b := Builder(Options{MaxSentences: sentences, SplitParallelism: 3, CountParallelism: 4, ReportEvery: time.Hour, Out: &report})
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}

	// Wrap the factories (Build has already used them to declare streams):
	// log the spout's sentences and keep every count bolt.
	log := &sentenceLog{want: sentences, done: make(chan struct{})}
	spout := topo.Spouts["sentence"]
	topo.Spouts["sentence"] = func() api.Spout { return &loggedSpout{Spout: spout(), log: log} }
	var mu sync.Mutex
	var counters []*CountBolt
	count := topo.Bolts["count"]
	topo.Bolts["count"] = func() api.Bolt {
		cb := count().(*CountBolt)
		mu.Lock()
		counters = append(counters, cb)
		mu.Unlock()
		return cb
	}

	r, err := inproc.New(topo, inproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		deadline := time.NewTimer(20 * time.Second)
		defer deadline.Stop()
		select {
		case <-log.done:
		case <-deadline.C:
		}
		cancel()
	}()
	s, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-log.done:
	default:
		t.Fatalf("the spout emitted %d of %d sentences before the deadline", len(log.sentences), sentences)
	}
	if s.Undrained != 0 {
		t.Fatalf("%d batches not drained", s.Undrained)
	}

	want := map[string]int64{}
	var words int64
	for _, sentence := range log.sentences {
		for _, w := range strings.Fields(sentence) {
			want[w]++
			words++
		}
	}
	if n := len(log.sentences); n != sentences {
		t.Errorf("spout emitted %d sentences, MaxSentences is %d", n, sentences)
	}
	if got := s.Component("sentence").Counters["words"]; got != words {
		t.Errorf("counter words = %d, the logged sentences have %d words", got, words)
	}
	if got := s.Component("count").Counters["counted"]; got != words {
		t.Errorf("counter counted = %d, want words = %d", got, words)
	}
	if got := s.Component("split").Emitted; got != words {
		t.Errorf("split emitted %d words, want %d", got, words)
	}

	// Run has returned, so the bolts are done; merge their counts. Fields
	// grouping puts every word in exactly one bolt.
	if len(counters) != 4 {
		t.Fatalf("%d count bolts ran, want 4", len(counters))
	}
	got := map[string]int64{}
	for _, cb := range counters {
		for w, c := range cb.Counts() {
			if _, dup := got[w]; dup {
				t.Errorf("word %q counted by two tasks", w)
			}
			got[w] = c
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("counts differ from what the spout emitted:\n got %v\nwant %v", got, want)
	}
	for _, c := range s.Components {
		if c.Errors != 0 || c.Dropped != 0 {
			t.Errorf("%s: %d errors, %d dropped", c.Name, c.Errors, c.Dropped)
		}
	}
	if !strings.HasPrefix(report.String(), "top words") {
		t.Errorf("report bolt printed %q", report.String())
	}
}

func TestSplitAndCountBolts(t *testing.T) {
	out := &fakeCollector{}
	split := &SplitBolt{}
	if err := split.Prepare(nil, out); err != nil {
		t.Fatal(err)
	}
	in := api.NewTuple("sentence", "default", 1, []string{"sentence"}, "the cow  jumped over the moon")
	split.Execute(in)
	var words []string
	for _, v := range out.emitted {
		words = append(words, v[0].(string))
	}
	if strings.Join(words, " ") != "the cow jumped over the moon" || out.acked != 1 {
		t.Errorf("split emitted %q, acked %d", words, out.acked)
	}
}

func TestTop(t *testing.T) {
	top := Top(map[string]int64{"b": 2, "a": 2, "c": 5, "d": 1}, 3)
	want := []WordCount{{"c", 5}, {"a", 2}, {"b", 2}}
	if len(top) != 3 || top[0] != want[0] || top[1] != want[1] || top[2] != want[2] {
		t.Errorf("Top = %v, want %v", top, want)
	}
	if got := Top(map[string]int64{"x": 1}, 10); len(got) != 1 {
		t.Errorf("Top with fewer words = %v", got)
	}
}

type fakeCollector struct {
	emitted []api.Values
	acked   int
}

func (c *fakeCollector) Emit(v api.Values, _ ...api.Tuple) { c.emitted = append(c.emitted, v) }
func (c *fakeCollector) EmitStream(_ string, v api.Values, _ ...api.Tuple) {
	c.emitted = append(c.emitted, v)
}
func (c *fakeCollector) EmitDirect(_ int, _ string, v api.Values, _ ...api.Tuple) {
	c.emitted = append(c.emitted, v)
}
func (c *fakeCollector) Ack(api.Tuple)     { c.acked++ }
func (c *fakeCollector) Fail(api.Tuple)    {}
func (c *fakeCollector) ReportError(error) {}
