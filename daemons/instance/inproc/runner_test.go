package inproc

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// countingSpout counts its NextTuple, Activate and Deactivate calls and
// signals every NextTuple call on called (without blocking).
type countingSpout struct {
	api.BaseSpout
	next, activated, deactivated *atomic.Int64
	called                       chan struct{}
	out                          api.SpoutCollector
}

func (s *countingSpout) Open(_ api.Context, out api.SpoutCollector) error {
	s.out = out
	return nil
}

func (s *countingSpout) NextTuple() {
	n := s.next.Add(1)
	s.out.Emit(api.Values{n}, nil)
	select {
	case s.called <- struct{}{}:
	default:
	}
}

func (s *countingSpout) Activate()                                { s.activated.Add(1) }
func (s *countingSpout) Deactivate()                              { s.deactivated.Add(1) }
func (s *countingSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("n") }

type sinkBolt struct{ api.BaseBolt }

func (sinkBolt) Execute(api.Tuple)                      {}
func (sinkBolt) DeclareOutputFields(api.OutputDeclarer) {}

// waitCalled waits for the next NextTuple call or fails at the deadline.
func waitCalled(t *testing.T, called <-chan struct{}, what string) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	select {
	case <-called:
	case <-deadline.C:
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestActivateDeactivate(t *testing.T) {
	var next, activated, deactivated atomic.Int64
	called := make(chan struct{}, 1)
	b := api.NewTopologyBuilder("activation")
	b.SetSpout("src", func() api.Spout {
		return &countingSpout{next: &next, activated: &activated, deactivated: &deactivated, called: called}
	}, 1)
	b.SetBolt("sink", func() api.Bolt { return sinkBolt{} }, 1).ShuffleGrouping("src")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(topo, Options{Deactivated: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan *Summary, 1)
	go func() {
		s, err := r.Run(runCtx)
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- s
	}()

	// Deactivated from the start: a deactivation round trip through the
	// spout's loop proves it is waiting without calling NextTuple.
	if err := r.SetActive(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n := next.Load(); n != 0 {
		t.Fatalf("NextTuple called %d times while deactivated", n)
	}
	if activated.Load() != 0 || deactivated.Load() != 0 {
		t.Fatalf("Activate/Deactivate called %d/%d times before any change", activated.Load(), deactivated.Load())
	}

	if err := r.SetActive(ctx, true); err != nil {
		t.Fatal(err)
	}
	waitCalled(t, called, "NextTuple after activation")
	if activated.Load() != 1 {
		t.Errorf("Activate called %d times, want 1", activated.Load())
	}

	if err := r.SetActive(ctx, false); err != nil {
		t.Fatal(err)
	}
	frozen := next.Load()
	// Two more round trips through the spout's loop: NextTuple must not
	// have been called in between.
	for i := 0; i < 2; i++ {
		if err := r.SetActive(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	if n := next.Load(); n != frozen {
		t.Fatalf("NextTuple calls grew from %d to %d while deactivated", frozen, n)
	}
	if deactivated.Load() != 1 {
		t.Errorf("Deactivate called %d times, want 1 (repeated deactivations are no-ops)", deactivated.Load())
	}

	// Drain the signal channel, then expect new calls after reactivation.
	select {
	case <-called:
	default:
	}
	if err := r.SetActive(ctx, true); err != nil {
		t.Fatal(err)
	}
	waitCalled(t, called, "NextTuple after reactivation")
	if n := next.Load(); n <= frozen {
		t.Fatalf("NextTuple calls did not grow after reactivation: %d", n)
	}
	if activated.Load() != 2 {
		t.Errorf("Activate called %d times, want 2", activated.Load())
	}

	stop()
	var s *Summary
	select {
	case s = <-done:
	case <-ctx.Done():
		t.Fatal("Run did not return")
	}
	if s == nil {
		t.Fatal("no summary")
	}
	// Everything the spout emitted was executed by the sink after the drain.
	src, sink := s.Component("src"), s.Component("sink")
	if src.Emitted != next.Load() || sink.Executed != src.Emitted {
		t.Errorf("emitted %d (NextTuple %d), executed %d", src.Emitted, next.Load(), sink.Executed)
	}
}

type failingSpout struct{ api.BaseSpout }

func (failingSpout) Open(api.Context, api.SpoutCollector) error { return errors.New("no source") }
func (failingSpout) NextTuple()                                 {}
func (failingSpout) DeclareOutputFields(d api.OutputDeclarer)   { d.Declare("n") }

func TestRunReturnsOpenError(t *testing.T) {
	b := api.NewTopologyBuilder("failing")
	b.SetSpout("src", func() api.Spout { return failingSpout{} }, 1)
	b.SetBolt("sink", func() api.Bolt { return sinkBolt{} }, 2).ShuffleGrouping("src")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(topo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = r.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "no source") || !strings.Contains(err.Error(), "open spout src") {
		t.Fatalf("Run = %v, want the Open error", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Run waited for the context instead of returning the error")
	}
}

func TestNewRejectsEffectivelyOnce(t *testing.T) {
	b := api.NewTopologyBuilder("acked")
	b.SetDeliveryMode(topology.EffectivelyOnce)
	b.SetSpout("src", func() api.Spout { return failingSpout{} }, 1)
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(topo, Options{}); err == nil || !strings.Contains(err.Error(), "effectively-once") {
		t.Fatalf("New = %v, want an error about the delivery mode", err)
	}
}

func TestLayoutAndMetrics(t *testing.T) {
	b := api.NewTopologyBuilder("layout")
	b.SetSpout("src", func() api.Spout { return failingSpout{} }, 2)
	b.SetBolt("sink", func() api.Bolt { return sinkBolt{} }, 3).ShuffleGrouping("src")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(topo, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := r.Layout()
	if got := l.Tasks["src"]; len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("src tasks %v", got)
	}
	if got := l.Tasks["sink"]; len(got) != 3 || got[0] != 3 {
		t.Errorf("sink tasks %v", got)
	}
	if len(r.Metrics()) != 5 {
		t.Errorf("Metrics has %d tasks", len(r.Metrics()))
	}
}
