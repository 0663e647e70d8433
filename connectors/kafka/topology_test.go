package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/instance/inproc"
	"github.com/egret-stream/egret/internal/kafkatest"
)

// TestTopologyCopiesATopicAtLeastOnce runs spout → sink as a real
// topology in the in-process runner (at-least-once): every record of "in"
// reaches "out" and the group commits all of "in".
func TestTopologyCopiesATopicAtLeastOnce(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "in", 2, nil)
	b.CreateTopic(t, "out", 2, nil)
	for p := int32(0); p < 2; p++ {
		produce(t, b, "in", p, vals("m", int(p)*100, int(p)*100+100)...)
	}
	tb := api.NewTopologyBuilder("copy")
	tb.SetDeliveryMode(topology.AtLeastOnce)
	tb.SetConfig(KeyBrokers, b.Addr) // read by both components from the config
	tb.SetSpout("kafka", NewSpout(SpoutConfig{Topics: []string{"in"}, Group: "copy", CommitInterval: 50 * time.Millisecond}), 2)
	tb.SetBolt("sink", NewSink(SinkConfig{Topic: "out"}), 2).ShuffleGrouping("kafka")
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := inproc.New(topo, inproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { _, err := r.Run(ctx); ran <- err }()
	adm := kadm.NewClient(b.Client(t))
	until(t, "in committed up to 100 per partition", nil, func() bool {
		return committed(t, adm, "copy", "in", 0) == 100 && committed(t, adm, "copy", "in", 1) == 100
	})
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := map[string]int{}
	for _, v := range recValues(readCommitted(t, b, "out", 2)) {
		got[v]++
	}
	for _, v := range append(vals("m", 0, 100), vals("m", 100, 200)...) {
		if got[v] == 0 {
			t.Fatalf("%s is missing from out (%d distinct records)", v, len(got))
		}
	}
	if len(got) != 200 {
		t.Fatalf("out holds %d distinct records, want 200", len(got))
	}
}
