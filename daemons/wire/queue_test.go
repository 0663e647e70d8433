package wire

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func byteLen(b []byte) int { return len(b) }

func TestQueueBoundAndModes(t *testing.T) {
	q := NewQueue[[]byte](10, byteLen)
	ctx := context.Background()
	if err := q.Push(ctx, make([]byte, 6)); err != nil {
		t.Fatal(err)
	}
	if err := q.Push(ctx, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if q.Bytes() != 10 || q.Empty() {
		t.Fatalf("bytes = %d", q.Bytes())
	}
	q.SetBlocking(false)
	if err := q.Push(ctx, make([]byte, 1)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("push to a full non-blocking queue: %v", err)
	}
	if err := q.PushUnbounded(make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	got := q.PopAll(nil)
	if len(got) != 3 || q.Bytes() != 13 {
		t.Fatalf("popped %d items, bytes %d", len(got), q.Bytes())
	}
	q.Release(13)
	if !q.Empty() {
		t.Fatal("queue not empty after release")
	}
	// An item above the bound enters an empty queue.
	if err := q.Push(ctx, make([]byte, 50)); err != nil {
		t.Fatalf("oversized item into an empty queue: %v", err)
	}
	q.Close()
	if err := q.Push(ctx, []byte{1}); !errors.Is(err, ErrQueueClosed) {
		t.Fatalf("push after close: %v", err)
	}
	n := 0
	q.Discard(func([]byte) { n++ })
	if n != 1 || !q.Empty() {
		t.Fatalf("discarded %d, bytes %d", n, q.Bytes())
	}
}

func TestQueueBlocksUntilReleased(t *testing.T) {
	q := NewQueue[[]byte](8, byteLen)
	ctx := context.Background()
	_ = q.Push(ctx, make([]byte, 8))
	const producers = 4
	var wg sync.WaitGroup
	for i := 0; i < producers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := q.Push(ctx, make([]byte, 8)); err != nil {
				t.Error(err)
			}
		}()
	}
	// The consumer drains one item at a time; every producer gets in.
	consumed := 0
	deadline := time.After(10 * time.Second)
	for consumed < producers+1 {
		select {
		case <-q.Ready():
		case <-deadline:
			t.Fatalf("consumed %d of %d items", consumed, producers+1)
		}
		items := q.PopAll(nil)
		for _, it := range items {
			q.Release(len(it))
			consumed++
		}
	}
	wg.Wait()
}

func TestQueueWaitingPushFailsWhenModeChanges(t *testing.T) {
	q := NewQueue[[]byte](4, byteLen)
	_ = q.Push(context.Background(), make([]byte, 4))
	errc := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { errc <- q.Push(context.Background(), make([]byte, 4)) }()
	}
	q.SetBlocking(false)
	for i := 0; i < 2; i++ {
		select {
		case err := <-errc:
			if !errors.Is(err, ErrQueueFull) {
				t.Fatalf("waiting push: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("waiting push did not return")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	q.SetBlocking(true)
	go func() { errc <- q.Push(ctx, make([]byte, 4)) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("push with a cancelled context: %v", err)
	}
}

func BenchmarkQueuePushPop(b *testing.B) {
	q := NewQueue[[]byte](1<<20, byteLen)
	item := make([]byte, 100)
	ctx := context.Background()
	var buf [][]byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = q.Push(ctx, item)
		if i%64 == 63 {
			buf = q.PopAll(buf[:0])
			q.Release(len(buf) * len(item))
		}
	}
}
