package gateway

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/daemons/wire"
)

// recordingSink is a stmgrSink that records the batches handed to it.
type recordingSink struct {
	mu     sync.Mutex
	counts []int
}

func (r *recordingSink) HandleData(_ context.Context, _ uint32, count int, _ []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts = append(r.counts, count)
	return nil
}

func (r *recordingSink) HandleFrame(context.Context, []byte) error { return nil }
func (r *recordingSink) Idle(uint32) bool                          { return true }

func (r *recordingSink) got() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.counts)
}

// An instance may emit before its direct session starts (its goroutine
// starts first) until the outbound queue is full. The session's start
// hands the queued batches over first and in order, also the one whose
// push waited for room, and later batches go directly.
func TestBatchesQueuedBeforeTheDirectSessionGoFirst(t *testing.T) {
	g := &gateway{log: zap.NewNop(), stats: &Stats{}}
	g.pool.New = func() any { return &wire.Batch{} }
	batch := func(count int) *wire.Batch {
		b := g.NewBatch(7)
		b.Buf, b.Count = append(b.Buf, make([]byte, 100)...), count
		return b
	}
	g.out = wire.NewQueue(3*batchSize(batch(0)), batchSize)
	g.out.SetBlocking(true)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		if err := g.push(ctx, batch(i)); err != nil {
			t.Fatal(err)
		}
	}
	waited := make(chan error, 1)
	go func() { waited <- g.push(ctx, batch(4)) }()
	select {
	case err := <-waited:
		t.Fatalf("a push to a full queue returned (%v) before the session started", err)
	case <-time.After(50 * time.Millisecond): // time for the push to block (the test holds either way)
	}

	sink := &recordingSink{}
	s := &session{errc: make(chan error, 1), done: make(chan struct{})}
	started := make(chan struct{})
	go func() {
		g.startDirect(ctx, s, &registration{in: &inSink{g: g, started: make(chan struct{})}, out: sink})
		close(started)
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the direct session did not start: the push waiting for room holds it up")
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("the push that waited for room: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the push that waited for room still waits after the direct session started")
	}
	if err := g.push(ctx, batch(5)); err != nil {
		t.Fatal(err)
	}
	if got, want := sink.got(), []int{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("batches handed over: %v, want %v", got, want)
	}
	if !g.out.Empty() {
		t.Error("the outbound queue is not empty")
	}
	if out := g.stats.TuplesOut.Load(); out != 15 {
		t.Errorf("tuples out = %d, want 15", out)
	}
}
