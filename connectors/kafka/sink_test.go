package kafka

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/internal/kafkatest"
)

var sinkFields = []string{"key", "value"}

func tuple(key, value string) api.Tuple {
	return api.NewTuple("up", "default", 1, sinkFields, key, value)
}

func prepareSink(t *testing.T, cfg SinkConfig, ctx *testCtx) (*Sink, *boltOut) {
	t.Helper()
	s := NewSink(cfg)().(*Sink)
	out := &boltOut{}
	if err := s.Prepare(ctx, out); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	t.Cleanup(s.Cleanup)
	return s, out
}

// pump runs the sink's Pump whenever Wake has a value, as the runtime does.
func pump(s *Sink) {
	select {
	case <-s.Wake():
		s.Pump()
	case <-time.After(20 * time.Millisecond):
	}
}

func TestSinkAtLeastOnceAcksAfterTheBrokerAcks(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "out", 2, nil)
	s, out := prepareSink(t, SinkConfig{Brokers: []string{b.Addr}, Topic: "out", ProduceTimeout: time.Minute},
		newCtx(t, topology.AtLeastOnce, "sink", 0, 1))
	for i := 0; i < 100; i++ {
		s.Execute(tuple("k"+strconv.Itoa(i), "v"+strconv.Itoa(i)))
	}
	if a, f := out.counts(); a != 0 || f != 0 {
		t.Fatalf("Execute acked %d and failed %d tuples itself; acks must wait for the broker (Pump)", a, f)
	}
	until(t, "100 acks", func() { pump(s) }, func() bool { a, _ := out.counts(); return a == 100 })
	got := recValues(readCommitted(t, b, "out", 2))
	sort.Strings(got)
	want := vals("v", 0, 100)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("topic holds %d records %v, want v0..v99 once each", len(got), got)
	}

	// A record produced while the broker is down is acked only once
	// the restarted broker has it (franz-go retries).
	b.Stop()
	s.Execute(tuple("down", "while-down"))
	for i := 0; i < 10; i++ {
		pump(s)
	}
	if a, f := out.counts(); a != 100 || f != 0 {
		t.Fatalf("with the broker down: acked %d, failed %d; want 100 and 0", a, f)
	}
	if err := b.Resume(); err != nil {
		t.Fatal(err)
	}
	s.Execute(tuple("up", "after-restart"))
	until(t, "both records acked after the restart", func() { pump(s) }, func() bool { a, f := out.counts(); return a+f == 102 })
	if a, f := out.counts(); a != 102 {
		t.Fatalf("acked %d, failed %d: records produced across the restart must be delivered within ProduceTimeout", a, f)
	}
	// Every acked tuple's record is in the topic (a failed one is
	// replayed by the spout, and may be there too: at-least-once).
	in := map[string]bool{}
	for _, v := range recValues(readCommitted(t, b, "out", 2)) {
		in[v] = true
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	for _, a := range out.acked {
		if !in[a.String(1)] {
			t.Fatalf("%s was acked but is not in the topic", a.String(1))
		}
	}
	if len(in) != 102 {
		t.Fatalf("the topic holds %d distinct records, want 102", len(in))
	}
}

// batchIDs returns the checkpoint ids of the sink's batches state.
func batchIDs(t *testing.T, states *api.States) []int64 {
	t.Helper()
	st, err := api.NewState[int64, []Rec](states, BatchesState)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	st.Range(func(id int64, _ []Rec) bool { ids = append(ids, id); return true })
	slices.Sort(ids)
	return ids
}

// checkExactly fails unless the read_committed view of topic holds
// exactly the values want, once each, each record carrying its
// checkpoint header.
func checkExactly(t *testing.T, b *kafkatest.Broker, topic string, want []string) {
	t.Helper()
	recs := readCommitted(t, b, topic, 2)
	got := recValues(recs)
	sort.Strings(got)
	w := slices.Clone(want)
	sort.Strings(w)
	if !slices.Equal(got, w) {
		t.Fatalf("read_committed sees %d records %v, want %d: %v", len(got), got, len(w), w)
	}
	for _, r := range recs {
		found := false
		for _, h := range r.Headers {
			found = found || h.Key == CheckpointHeader
		}
		if !found {
			t.Fatalf("record %q has no %s header", r.Value, CheckpointHeader)
		}
	}
}

func TestSinkTwoPhaseCommit(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "out", 2, nil)
	cfg := SinkConfig{Brokers: []string{b.Addr}, Topic: "out", MarkerTopic: "markers", ProduceTimeout: 10 * time.Second}
	newSink := func(states *api.States) (*Sink, *boltOut) {
		s, out := prepareSink(t, cfg, newCtx(t, topology.EffectivelyOnce, "sink", 0, 1))
		if err := s.InitState(states); err != nil {
			t.Fatal(err)
		}
		return s, out
	}
	exec := func(s *Sink, vs ...string) {
		for _, v := range vs {
			s.Execute(tuple("k-"+v, v))
		}
	}
	var want []string

	states := api.NewStates()
	s, out := newSink(states)
	exec(s, vals("a", 0, 5)...)
	if err := s.PreSave(1); err != nil {
		t.Fatal(err)
	}
	exec(s, vals("b", 0, 3)...)
	if err := s.PreSave(2); err != nil {
		t.Fatal(err)
	}
	if a, _ := out.counts(); a != 8 {
		t.Fatalf("acked %d, want 8", a)
	}
	checkExactly(t, b, "out", nil) // nothing before a checkpoint completes
	if ids := batchIDs(t, snapshot(t, states)); !slices.Equal(ids, []int64{1, 2}) {
		t.Fatalf("batches in state %v, want [1 2]", ids)
	}

	s.CheckpointComplete(1)
	want = append(want, vals("a", 0, 5)...)
	checkExactly(t, b, "out", want)
	s.CheckpointComplete(1) // again: idempotent
	checkExactly(t, b, "out", want)
	s.CheckpointComplete(2)
	want = append(want, vals("b", 0, 3)...)
	checkExactly(t, b, "out", want)
	if ids := batchIDs(t, snapshot(t, states)); len(ids) != 0 {
		t.Fatalf("committed batches still in state: %v", ids)
	}

	// Crash after checkpoint 3 is complete but before the sink wrote it
	// to Kafka: a new sink restores checkpoint 3's states and the runtime
	// calls CheckpointComplete(3) again.
	exec(s, vals("c", 0, 4)...)
	if err := s.PreSave(3); err != nil {
		t.Fatal(err)
	}
	cp3 := snapshot(t, states)
	s.closeClients()                 // the process dies: nothing is flushed or committed
	s, _ = newSink(snapshot(t, cp3)) // a copy: cp3 is restored again below
	s.CheckpointComplete(3)
	want = append(want, vals("c", 0, 4)...)
	checkExactly(t, b, "out", want)

	// Crash after the Kafka commit of checkpoint 4 but before checkpoint
	// 5 saved a state without its batch: the restored state still holds
	// batch 4, and the marker makes the retry skip it.
	states = snapshot(t, cp3)
	s, _ = newSink(states)
	s.CheckpointComplete(3) // batch 3 is already in Kafka: dropped, not written
	checkExactly(t, b, "out", want)
	exec(s, vals("d", 0, 6)...)
	if err := s.PreSave(4); err != nil {
		t.Fatal(err)
	}
	cp4 := snapshot(t, states)
	if ids := batchIDs(t, snapshot(t, cp4)); !slices.Equal(ids, []int64{4}) {
		t.Fatalf("batches in checkpoint 4 %v, want [4]", ids)
	}
	s.CheckpointComplete(4)
	want = append(want, vals("d", 0, 6)...)
	checkExactly(t, b, "out", want)
	s.closeClients()
	s, _ = newSink(snapshot(t, cp4))
	s.CheckpointComplete(4)
	checkExactly(t, b, "out", want)

	// A rollback drops what was buffered since the last checkpoint (the
	// topology replays it).
	exec(s, "lost-in-rollback")
	if err := s.InitState(snapshot(t, cp4)); err != nil {
		t.Fatal(err)
	}
	exec(s, vals("e", 0, 2)...)
	if err := s.PreSave(5); err != nil {
		t.Fatal(err)
	}
	s.CheckpointComplete(5)
	want = append(want, vals("e", 0, 2)...)
	checkExactly(t, b, "out", want)

	// Crash in the middle of a transaction: a zombie of the same
	// transactional id has produced into an open transaction and died.
	// The new sink fences it (its transaction is aborted) and writes the
	// batch once; the zombie can no longer commit.
	zombie := b.Client(t, kgo.TransactionalID("egret-kt-sink-0"), kgo.TransactionTimeout(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s.closeClients()
	st6 := api.NewStates()
	bt, _ := api.NewState[int64, []Rec](st6, BatchesState)
	bt.Put(6, []Rec{{Key: []byte("k"), Value: []byte("f0")}})
	s, out = newSink(snapshot(t, st6))
	s.CheckpointComplete(6)
	want = append(want, "f0")
	checkExactly(t, b, "out", want)
	if err := zombie.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced zombie committed its transaction")
	}
	checkExactly(t, b, "out", want)
	if len(out.errs) != 0 {
		t.Fatalf("sink reported errors: %v", out.errs)
	}
}

// TestSinkTwoPhaseCommitRetriesAfterBrokerRestart: a commit that fails
// because the broker is down leaves the batches in state; after the
// restart the next CheckpointComplete writes them, once.
func TestSinkTwoPhaseCommitRetriesAfterBrokerRestart(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "out", 2, nil)
	cfg := SinkConfig{Brokers: []string{b.Addr}, Topic: "out", MarkerTopic: "markers", ProduceTimeout: 2 * time.Second}
	s, out := prepareSink(t, cfg, newCtx(t, topology.EffectivelyOnce, "sink", 0, 1))
	states := api.NewStates()
	if err := s.InitState(states); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		s.Execute(tuple("k", fmt.Sprint("x", i)))
	}
	if err := s.PreSave(1); err != nil {
		t.Fatal(err)
	}
	s.CheckpointComplete(1)
	b.Stop()
	for i := 3; i < 6; i++ {
		s.Execute(tuple("k", fmt.Sprint("x", i)))
	}
	if err := s.PreSave(2); err != nil {
		t.Fatal(err)
	}
	s.CheckpointComplete(2) // fails: the broker is down
	if len(out.errs) == 0 {
		t.Fatal("a commit with the broker down reported no error")
	}
	if ids := batchIDs(t, snapshot(t, states)); !slices.Equal(ids, []int64{2}) {
		t.Fatalf("batches after the failed commit %v, want [2]", ids)
	}
	if err := b.Resume(); err != nil {
		t.Fatal(err)
	}
	s.Execute(tuple("k", "x6"))
	if err := s.PreSave(3); err != nil {
		t.Fatal(err)
	}
	until(t, "the batches written after the restart", func() { s.CheckpointComplete(3) }, func() bool {
		ids := batchIDs(t, snapshot(t, states))
		return len(ids) == 0
	})
	checkExactly(t, b, "out", vals("x", 0, 7))
}
