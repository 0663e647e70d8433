package instance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// tickBolt counts tick tuples and records Reconfigure calls.
type tickBolt struct {
	api.BaseBolt
	mu      sync.Mutex
	ticks   int
	changes []map[string]string
}

func (b *tickBolt) Execute(t api.Tuple) {
	if t.IsTick() {
		b.mu.Lock()
		b.ticks++
		b.mu.Unlock()
	}
}
func (b *tickBolt) DeclareOutputFields(api.OutputDeclarer) {}
func (b *tickBolt) Reconfigure(changed map[string]string) {
	b.mu.Lock()
	b.changes = append(b.changes, changed)
	b.mu.Unlock()
}

func (b *tickBolt) state() (int, []map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ticks, append([]map[string]string(nil), b.changes...)
}

// TestReconfigureLive: a MsgConfig starts tick tuples at the new
// frequency and hands the user settings to a Reconfigurable bolt, without
// a restart; a setting the component fixes itself is not changed.
func TestReconfigureLive(t *testing.T) {
	bolt := &tickBolt{}
	b := api.NewTopologyBuilder("ticks")
	b.SetSpout("const", func() api.Spout { return &constSpout{} }, 1)
	b.SetBolt("tick", func() api.Bolt { return bolt }, 1).ShuffleGrouping("const").SetConfig(topology.KeyMessageTimeout, "30s")
	in, mt := newInstance(t, b, "tick")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	defer func() { cancel(); <-done }()

	if ticks, _ := bolt.state(); ticks != 0 {
		t.Fatalf("%d ticks before any tick frequency is set", ticks)
	}
	mt.inbox <- Msg{Kind: MsgConfig, Config: map[string]string{topology.KeyTickFrequency: "10ms", "app.threshold": "7", topology.KeyMessageTimeout: "1s"}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ticks, changes := bolt.state()
		if ticks >= 3 && len(changes) == 1 {
			if len(changes[0]) != 1 || changes[0]["app.threshold"] != "7" {
				t.Fatalf("Reconfigure got %v, want only the user setting app.threshold=7", changes[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %d ticks, Reconfigure calls %v", ticks, changes)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := in.metrics.Reconfigurations.Load(); n != 1 {
		t.Errorf("Reconfigurations = %d, want 1", n)
	}
	// Ticks stop when the frequency goes to 0: once a later message was
	// handled (the marker), no tick may arrive.
	mt.inbox <- Msg{Kind: MsgConfig, Config: map[string]string{topology.KeyTickFrequency: "0s"}}
	mt.inbox <- Msg{Kind: MsgConfig, Config: map[string]string{"app.marker": "1"}}
	for {
		if _, changes := bolt.state(); len(changes) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the marker never reached Reconfigure")
		}
		time.Sleep(10 * time.Millisecond)
	}
	before, _ := bolt.state()
	time.Sleep(100 * time.Millisecond) // ticks at 10ms would have come
	if after, _ := bolt.state(); after != before {
		t.Errorf("%d ticks after the frequency was set to 0", after-before)
	}
}
