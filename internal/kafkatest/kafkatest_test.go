package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBrokerProducesConsumesAndRestarts starts a broker, produces, restarts
// it on the same directory and reads the records back.
func TestBrokerProducesConsumesAndRestarts(t *testing.T) {
	b := Start(t)
	b.CreateTopic(t, "t1", 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := b.Client(t)
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "t1", Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "t1", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	c := b.Client(t, kgo.ConsumeTopics("t1"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < 2 {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read back %v before the deadline", seen)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if !seen["before"] || !seen["after"] {
		t.Fatalf("read %v, want before and after", seen)
	}
}
