package sentencewc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/bench/topologies/latency"
	"github.com/egret-stream/egret/daemons/instance/inproc"
)

func TestSentencesAverageSixPointFourWords(t *testing.T) {
	words := 0
	for _, s := range Sentences {
		words += len(strings.Fields(s))
	}
	if avg := float64(words) / float64(len(Sentences)); avg != 6.4 {
		t.Errorf("average %v words, want 6.4 (TVL's)", avg)
	}
}

func TestBuilderRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{{Splits: -1}, {Rate: -1}, {MaxPending: -2}} {
		if _, err := Builder(o); err == nil {
			t.Errorf("%+v: want an error", o)
		}
	}
}

// recordingCollector collects a bolt's emits (copies: like the runtime's
// collector, it keeps no slice) and acks.
type recordingCollector struct {
	api.BoltCollector
	emitted []api.Values
	acked   int
}

func (c *recordingCollector) Emit(v api.Values, _ ...api.Tuple) {
	c.emitted = append(c.emitted, append(api.Values(nil), v...))
}
func (c *recordingCollector) Ack(api.Tuple) { c.acked++ }

func TestSplitCopiesTheScheduledTime(t *testing.T) {
	out := &recordingCollector{}
	b := &SplitBolt{out: out, Acking: true, vals: make(api.Values, 2)}
	b.Execute(api.NewTuple(SpoutName, "default", 1, []string{"sentence", "scheduled"}, "the cow  jumped", int64(42)))
	if len(out.emitted) != 3 || out.acked != 1 {
		t.Fatalf("emitted %v, acked %d", out.emitted, out.acked)
	}
	for i, w := range []string{"the", "cow", "jumped"} {
		if out.emitted[i][0] != w || out.emitted[i][1] != int64(42) {
			t.Errorf("word %d: %v", i, out.emitted[i])
		}
	}
}

// TestLatencyAtAFixedRate runs the topology in this process at 2000
// sentences/s with acking and checks both recorders wrote intervals whose
// counts match the offered rate.
func TestLatencyAtAFixedRate(t *testing.T) {
	dir := t.TempDir()
	b, err := Builder(Options{Acking: true, MaxPending: 1000, Rate: 2000, LatencyDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := inproc.New(topo, inproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *inproc.Summary, 1)
	start := time.Now()
	go func() {
		s, err := r.Run(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, found, err := latency.Merge(dir, SinkLatency, start, time.Now())
		if err != nil {
			cancel()
			<-done
			t.Fatal(err)
		}
		if found && s.Intervals >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("no latency intervals after 30s (found %v)", found)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	sum := <-done
	if sum == nil {
		t.Fatal("no summary")
	}
	elapsed := time.Since(start).Seconds()
	spout := sum.Component(SpoutName)
	// The pacer never emits ahead of the schedule.
	if max := 2000*elapsed + 64; float64(spout.Emitted) > max {
		t.Errorf("emitted %d sentences in %.1fs at 2000/s", spout.Emitted, elapsed)
	}
	sink, found, err := latency.Merge(dir, SinkLatency, start, time.Now().Add(time.Second))
	if err != nil || !found || sink.Count == 0 || sink.P50 <= 0 || sink.Max < sink.P99 {
		t.Errorf("sink latency %+v, found %v, err %v", sink, found, err)
	}
	if _, found, err := latency.Merge(dir, CompleteLatency, start, time.Now().Add(time.Second)); err != nil || !found {
		t.Errorf("complete latency: found %v, err %v", found, err)
	}
}
