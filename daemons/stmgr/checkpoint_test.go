package stmgr

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// newAlignTest returns a stream manager with one local task (7) whose
// input comes from tasks 1 and 2, in effectively-once mode at epoch 3.
func newAlignTest(t *testing.T) (*StMgr, *taskDest) {
	t.Helper()
	s := &StMgr{log: zap.NewNop(), set: settings{bufferMax: 1 << 20}, bp: newBackPressure()}
	s.pool.New = func() any { return &frame{} }
	s.eo.init("", s.log)
	s.eo.on.Store(true)
	s.eo.epoch.Store(3)
	s.eo.alignTimeout.Store(int64(time.Minute))
	td := s.newTaskDest(7)
	td.q.SetBlocking(false)
	td.al.epoch = 3
	td.al.upstream = map[uint32]bool{1: true, 2: true}
	rt := &routes{local: make([]*taskDest, 8)}
	rt.local[7] = td
	s.table.Store(rt)
	return s, td
}

// data is a data frame of one tuple from src to task 7 whose values are
// the byte tag, stamped with epoch.
func (s *StMgr) testData(src uint32, tag byte, epoch int64) *frame {
	rec := wire.AppendRecord(nil, &wire.Header{SrcTask: src, Stream: 1}, []byte{tag})
	f := s.getFrame()
	f.body = wire.AppendDataFrame(f.body[:0], &wire.Batch{Dest: 7, Count: 1, Buf: rec})[4:]
	f.epoch = epoch
	return f
}

func (s *StMgr) testBarrier(src uint32, ckpt, epoch int64) *frame {
	f := s.getFrame()
	f.body = wire.AppendBarrier(f.body[:0], wire.Barrier{Dest: 7, Src: src, Checkpoint: ckpt, Epoch: epoch})[4:]
	f.epoch = epoch
	return f
}

// drain returns what task 7's queue holds, one word per frame: "d<src>:<tag>"
// for data, "b<ckpt>" or "b<ckpt>!" (aborted) for a barrier.
func drain(t *testing.T, td *taskDest) []string {
	t.Helper()
	var out []string
	for _, f := range td.q.PopAll(nil) {
		switch wire.FrameType(f.body[0]) {
		case wire.FrameData:
			src, _ := wire.FirstSource(f.body[1:])
			out = append(out, fmt.Sprintf("d%d:%d", src, f.body[len(f.body)-1]))
		case wire.FrameBarrier:
			b, err := wire.ParseBarrier(f.body[1:])
			if err != nil {
				t.Fatal(err)
			}
			w := fmt.Sprintf("b%d", b.Checkpoint)
			if b.Flags&wire.BarrierAborted != 0 {
				w += "!"
			}
			out = append(out, w)
		default:
			out = append(out, wire.FrameType(f.body[0]).String())
		}
		td.q.Release(frameSize(f))
	}
	return out
}

func equal(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestAlignmentHoldsAlignedChannels: after task 1's barrier, its frames
// wait until task 2's barrier arrived; task 2's frames pass meanwhile;
// then the barrier reaches the task ahead of what was held.
func TestAlignmentHoldsAlignedChannels(t *testing.T) {
	s, td := newAlignTest(t)
	ctx := context.Background()
	for _, f := range []*frame{
		s.testData(1, 1, 3), s.testBarrier(1, 5, 3), s.testData(1, 2, 3), // task 1 is aligned: 1:2 is held
		s.testData(2, 3, 3), // task 2 is slow: its frame passes
		s.testBarrier(2, 5, 3), s.testData(2, 4, 3),
	} {
		if err := s.deliverLocal(ctx, td, f, frameTuples(f)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := drain(t, td), []string{"d1:1", "d2:3", "b5", "d1:2", "d2:4"}; !equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	// A late duplicate barrier of checkpoint 5 and an older one change
	// nothing.
	_ = s.deliverLocal(ctx, td, s.testBarrier(1, 5, 3), 0)
	_ = s.deliverLocal(ctx, td, s.testBarrier(2, 4, 3), 0)
	_ = s.deliverLocal(ctx, td, s.testData(1, 9, 3), 1)
	if got, want := drain(t, td), []string{"d1:9"}; !equal(got, want) {
		t.Fatalf("after stale barriers: delivered %v, want %v", got, want)
	}
}

// TestAlignmentTimeMeasured: the time from the first upstream barrier to
// the last is what the task's state report carries for that checkpoint,
// and nothing for a checkpoint the task did not align.
func TestAlignmentTimeMeasured(t *testing.T) {
	s, td := newAlignTest(t)
	ctx := context.Background()
	before := time.Now()
	_ = s.deliverLocal(ctx, td, s.testBarrier(1, 5, 3), 0)
	time.Sleep(20 * time.Millisecond) // the other input's barrier is late
	_ = s.deliverLocal(ctx, td, s.testBarrier(2, 5, 3), 0)
	within := time.Since(before)
	if got := s.alignedIn(7, 5); got < 20*time.Millisecond || got > within {
		t.Errorf("alignment of checkpoint 5 took %s, want between 20ms and %s", got, within)
	}
	if got := s.alignedIn(7, 4); got != 0 {
		t.Errorf("checkpoint 4 was not aligned, got %s", got)
	}
	if got := s.alignedIn(6, 5); got != 0 {
		t.Errorf("task 6 is not local, got %s", got)
	}
}

// TestAlignmentTimeoutAbortsAndReleases: an alignment that takes longer
// than the timeout releases the barrier flagged aborted and what was held,
// and counts it; a newer barrier aborts an older alignment the same way.
func TestAlignmentTimeoutAbortsAndReleases(t *testing.T) {
	s, td := newAlignTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.eo.alignTimeout.Store(int64(50 * time.Millisecond))
	_ = s.deliverLocal(ctx, td, s.testBarrier(1, 5, 3), 0)
	_ = s.deliverLocal(ctx, td, s.testData(1, 1, 3), 1)
	if got := drain(t, td); len(got) != 0 {
		t.Fatalf("delivered %v while aligning", got)
	}
	go s.runAlignmentTimeouts(ctx)
	deadline := time.Now().Add(30 * time.Second)
	var got []string
	for len(got) < 2 && time.Now().Before(deadline) {
		select {
		case <-td.q.Ready():
		case <-time.After(time.Until(deadline)):
		}
		got = append(got, drain(t, td)...)
	}
	if want := []string{"b5!", "d1:1"}; !equal(got, want) {
		t.Fatalf("after the timeout: delivered %v, want %v", got, want)
	}
	if n := s.eo.aborted.Load(); n != 1 {
		t.Fatalf("aborted = %d, want 1", n)
	}
	cancel()

	s.eo.alignTimeout.Store(int64(time.Hour))
	_ = s.deliverLocal(context.Background(), td, s.testBarrier(2, 6, 3), 0)
	_ = s.deliverLocal(context.Background(), td, s.testData(2, 2, 3), 1)
	_ = s.deliverLocal(context.Background(), td, s.testBarrier(1, 7, 3), 0) // 7 before 6 completed
	if got, want := drain(t, td), []string{"b6!", "d2:2"}; !equal(got, want) {
		t.Fatalf("newer barrier: delivered %v, want %v", got, want)
	}
}

// TestEpochFencing: frames read in an older epoch never reach the task,
// and a restore empties the task's queue and what alignment held.
func TestEpochFencing(t *testing.T) {
	s, td := newAlignTest(t)
	ctx := context.Background()
	_ = s.deliverLocal(ctx, td, s.testData(1, 1, 2), 1)    // older epoch: dropped
	_ = s.deliverLocal(ctx, td, s.testBarrier(1, 5, 2), 0) // likewise
	_ = s.deliverLocal(ctx, td, s.testData(1, 2, 3), 1)
	if got, want := drain(t, td), []string{"d1:2"}; !equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	if n := s.eo.fenced.Load(); n != 2 {
		t.Fatalf("fenced = %d, want 2", n)
	}
	_ = s.deliverLocal(ctx, td, s.testBarrier(1, 6, 3), 0)
	_ = s.deliverLocal(ctx, td, s.testData(1, 3, 3), 1) // held
	_ = s.deliverLocal(ctx, td, s.testData(2, 4, 3), 1) // queued
	s.restore(&egretpb.RestoreTopologyState{CheckpointId: 0, Epoch: 4})
	got := drain(t, td)
	if len(got) != 1 || got[0] != "RestoreInstanceState" {
		t.Fatalf("after the restore the queue holds %v, want only the restore", got)
	}
	_ = s.deliverLocal(ctx, td, s.testData(2, 5, 3), 1) // in flight from epoch 3
	if got := drain(t, td); len(got) != 0 {
		t.Fatalf("a frame of the old epoch reached the task after the restore: %v", got)
	}
}
