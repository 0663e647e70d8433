package instance

import (
	"testing"
	"time"
)

// TestFailAllReleasesEveryPendingRoot: when the ledger is lost, every
// pending root is failed at once (oldest first), counted, and results that
// arrive for them later are ignored.
func TestFailAllReleasesEveryPendingRoot(t *testing.T) {
	in := &Instance{metrics: &Metrics{}}
	now := time.Unix(100, 0)
	sa := newSpoutAcks(0, time.Minute, func() time.Time { return now }, 12345)
	var ids []uint64
	for i := range 5 {
		ids = append(ids, sa.add(in, i))
	}
	slot, _ := sa.lookup(ids[2])
	sa.release(slot) // settled before the loss
	got := sa.failAll(in)
	if len(got) != 4 || got[0] != 0 || got[1] != 1 || got[2] != 3 || got[3] != 4 {
		t.Fatalf("failAll = %v, want [0 1 3 4]", got)
	}
	if sa.n != 0 || in.metrics.Failed.Load() != 4 || in.metrics.PendingRoots.Load() != 0 {
		t.Fatalf("pending %d, failed %d, pending metric %d", sa.n, in.metrics.Failed.Load(), in.metrics.PendingRoots.Load())
	}
	if _, ok := sa.lookup(ids[0]); ok {
		t.Fatal("a failed root is still pending")
	}
	if again := sa.failAll(in); len(again) != 0 {
		t.Fatalf("second failAll = %v", again)
	}
	// New roots after the loss are tracked as usual.
	if id := sa.add(in, "new"); id == 0 || sa.n != 1 {
		t.Fatalf("add after failAll: id %d, pending %d", id, sa.n)
	}
}
