package kafkawordcount

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/connectors/kafka"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/instance/inproc"
	"github.com/egret-stream/egret/internal/kafkatest"
)

func TestTopologyValidates(t *testing.T) {
	topo, err := Builder(Options{Brokers: "127.0.0.1:9092"}).Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := topology.Validate(topo.Logical); err != nil {
		t.Fatal(err)
	}
	if m := topo.Logical.DeliveryMode(); m != topology.EffectivelyOnce {
		t.Fatalf("delivery mode %s, want effectively-once by default", m)
	}
	for _, c := range []string{"sentences", "split", "count", "sink"} {
		if _, ok := topo.Logical.Component(c); !ok {
			t.Fatalf("no component %s", c)
		}
	}
	if got := topo.Logical.Setting("sink", kafka.KeyTopic); got != "counts" {
		t.Fatalf("sink topic %q, want counts", got)
	}
	// The stateful components are what effectively-once needs.
	if _, ok := topo.Bolts["count"]().(api.Stateful); !ok {
		t.Fatal("the count bolt is not api.Stateful")
	}
	if _, ok := topo.Bolts["sink"]().(api.CheckpointListener); !ok {
		t.Fatal("the sink is not an api.CheckpointListener")
	}
	if _, ok := topo.Spouts["sentences"]().(api.Stateful); !ok {
		t.Fatal("the spout is not api.Stateful")
	}
}

type emitted struct {
	values api.Values
}

type collector struct{ out []emitted }

func (c *collector) Emit(v api.Values, _ ...api.Tuple)                 { c.out = append(c.out, emitted{v}) }
func (c *collector) EmitStream(_ string, v api.Values, a ...api.Tuple) { c.Emit(v, a...) }
func (c *collector) EmitDirect(_ int, _ string, v api.Values, a ...api.Tuple) {
	c.Emit(v, a...)
}
func (c *collector) Ack(api.Tuple)     {}
func (c *collector) Fail(api.Tuple)    {}
func (c *collector) ReportError(error) {}

type ctx struct{ api.Context }

func (ctx) Logger() *zap.Logger { return zap.NewNop() }

func word(w string) api.Tuple { return api.NewTuple("split", "default", 1, []string{"word"}, w) }

func TestCountBoltKeepsCountsInStateAcrossARollback(t *testing.T) {
	b := &CountBolt{}
	out := &collector{}
	if err := b.Prepare(ctx{}, out); err != nil {
		t.Fatal(err)
	}
	states := api.NewStates()
	if err := b.InitState(states); err != nil {
		t.Fatal(err)
	}
	for _, w := range strings.Fields("a b a c a") {
		b.Execute(word(w))
	}
	if err := b.PreSave(1); err != nil {
		t.Fatal(err)
	}
	saved, err := states.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b.Execute(word("a"))
	b.Execute(word("b"))
	if b.Count("a") != 4 {
		t.Fatalf("a counted %d, want 4", b.Count("a"))
	}
	last := out.out[len(out.out)-1].values
	if last[0] != "b" || last[1] != "b 2" {
		t.Fatalf("last emit %v, want [b, b 2]", last)
	}
	restored, err := api.UnmarshalStates(saved)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.InitState(restored); err != nil {
		t.Fatal(err)
	}
	if b.Count("a") != 3 || b.Count("b") != 1 || b.Count("c") != 1 {
		t.Fatalf("after the rollback a=%d b=%d c=%d, want 3 1 1", b.Count("a"), b.Count("b"), b.Count("c"))
	}
	b.Execute(word("a"))
	if last := out.out[len(out.out)-1].values; last[1] != "a 4" {
		t.Fatalf("after the rollback emitted %v, want a 4", last)
	}
}

// TestWordCountAgainstABrokerAtLeastOnce runs the topology (at-least-once:
// the in-process runner has no effectively-once runtime) from a real
// topic to a real topic and checks the final count of every word.
func TestWordCountAgainstABrokerAtLeastOnce(t *testing.T) {
	br := kafkatest.Start(t)
	br.CreateTopic(t, "sentences", 2, nil)
	br.CreateTopic(t, "counts", 2, nil)
	sentences := []string{"the cow jumped over the moon", "the quick brown fox", "a cow a fox"}
	want := map[string]int64{}
	p := br.Client(t)
	pctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < 30; i++ {
		s := sentences[i%len(sentences)]
		for _, w := range strings.Fields(s) {
			want[w]++
		}
		if err := p.ProduceSync(pctx, &kgo.Record{Topic: "sentences", Value: []byte(s)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	topo, err := Builder(Options{Brokers: br.Addr, Mode: topology.AtLeastOnce}).Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := inproc.New(topo, inproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = r.Run(rctx) }()
	c := br.Client(t, kgo.ConsumeTopics("counts"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := map[string]int64{}
	done := func() bool {
		for w, n := range want {
			if got[w] != n {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := c.PollFetches(pctx)
		if pctx.Err() != nil {
			t.Fatalf("counts read %v, want %v", got, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			w, n, _ := strings.Cut(string(r.Value), " ")
			if string(r.Key) != w {
				t.Errorf("record key %q, value %q", r.Key, r.Value)
			}
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				t.Errorf("value %q: %v", r.Value, err)
			}
			got[w] = max(got[w], v)
		})
	}
	stop()
	wg.Wait()
	for w := range got {
		if _, ok := want[w]; !ok {
			t.Fatalf("unexpected word %q", w)
		}
	}
}
