package kafka

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
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

// preparedIDs returns the checkpoint ids of the sink's prepared
// transactions in states.
func preparedIDs(t *testing.T, states *api.States) []int64 {
	t.Helper()
	st, err := api.NewState[string, PreparedTxn](states, TransactionsState)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	st.Range(func(_ string, p PreparedTxn) bool { ids = append(ids, p.Checkpoint); return true })
	slices.Sort(ids)
	return ids
}

// checkExactly fails unless the read_committed view of topic holds
// exactly the values want, once each.
//
// A commit's markers reach the partitions shortly after EndTxn returns,
// so it reads again until the view is complete; a record read twice or
// not wanted fails at once.
func checkExactly(t *testing.T, b *kafkatest.Broker, topic string, want []string) {
	t.Helper()
	w := slices.Clone(want)
	sort.Strings(w)
	end := time.Now().Add(30 * time.Second)
	for {
		got := recValues(readCommitted(t, b, topic, 2))
		sort.Strings(got)
		if slices.Equal(got, w) {
			return
		}
		seen := map[string]bool{}
		for _, v := range got {
			if seen[v] || !slices.Contains(w, v) {
				t.Fatalf("read_committed sees %q twice or unwanted: %d records %v, want %d: %v", v, len(got), got, len(w), w)
			}
			seen[v] = true
		}
		if time.Now().After(end) {
			t.Fatalf("read_committed sees %d records %v, want %d: %v", len(got), got, len(w), w)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eoSinks builds effectively-once sinks of task 0 and plays the runtime's
// part: InitState with a state, and "kill -9" (the clients vanish without
// ending anything).
type eoSinks struct {
	t    *testing.T
	cfg  SinkConfig
	exit []int // exit codes the sinks asked for
}

func (e *eoSinks) start(states *api.States) (*Sink, *boltOut) {
	e.t.Helper()
	return e.startTask(states, 0, 1)
}

func (e *eoSinks) startTask(states *api.States, index, tasks int) (*Sink, *boltOut) {
	e.t.Helper()
	s, out := prepareSink(e.t, e.cfg, newCtx(e.t, topology.EffectivelyOnce, "sink", index, tasks))
	s.tx.exit = func(code int) { e.exit = append(e.exit, code) }
	if err := s.InitState(states); err != nil {
		e.t.Fatal(err)
	}
	return s, out
}

// kill drops s as a dying process would: nothing flushed, aborted or
// committed.
func kill(s *Sink) {
	if s.tx.open != nil {
		s.tx.open.Close()
		s.tx.open = nil
	}
}

func execAll(s *Sink, vs ...string) {
	for _, v := range vs {
		s.Execute(tuple("k-"+v, v))
	}
}

func TestSinkTwoPhaseCommit(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "out", 2, nil)
	e := &eoSinks{t: t, cfg: SinkConfig{Brokers: []string{b.Addr}, Topic: "out", ProduceTimeout: 10 * time.Second, TransactionSlots: 4}}
	var want []string

	states := api.NewStates()
	s, out := e.start(states)
	execAll(s, vals("a", 0, 5)...)
	if err := s.PreSave(1); err != nil {
		t.Fatal(err)
	}
	execAll(s, vals("b", 0, 3)...)
	if err := s.PreSave(2); err != nil {
		t.Fatal(err)
	}
	if a, _ := out.counts(); a != 8 {
		t.Fatalf("acked %d, want 8", a)
	}
	checkExactly(t, b, "out", nil) // in Kafka, in open transactions: invisible
	if ids := preparedIDs(t, snapshot(t, states)); !slices.Equal(ids, []int64{1, 2}) {
		t.Fatalf("prepared transactions in state %v, want [1 2]", ids)
	}
	if err := s.PreSave(3); err != nil { // nothing since 2: nothing prepared
		t.Fatal(err)
	}

	s.CheckpointComplete(1)
	if len(out.errs) > 0 {
		t.Fatalf("commit of checkpoint 1: %v", out.errs)
	}
	want = append(want, vals("a", 0, 5)...)
	checkExactly(t, b, "out", want)
	s.CheckpointComplete(1) // again: idempotent
	checkExactly(t, b, "out", want)
	s.CheckpointComplete(3) // commits 2 (≤ 3)
	want = append(want, vals("b", 0, 3)...)
	checkExactly(t, b, "out", want)
	if ids := preparedIDs(t, snapshot(t, states)); len(ids) != 0 {
		t.Fatalf("committed transactions still in state: %v", ids)
	}

	// Crash after checkpoint 4 is complete but before the sink committed
	// it: a new process restores checkpoint 4's state and the runtime
	// calls CheckpointComplete(4) again. The records it produced after
	// the barrier are in an open transaction of the dead process, which
	// the new one aborts by fencing.
	execAll(s, vals("c", 0, 4)...)
	if err := s.PreSave(4); err != nil {
		t.Fatal(err)
	}
	cp4 := snapshot(t, states)
	execAll(s, "after-4-lost")
	kill(s)
	s, _ = e.start(snapshot(t, cp4))
	s.CheckpointComplete(4)
	want = append(want, vals("c", 0, 4)...)
	checkExactly(t, b, "out", want) // reads up to the last stable offset: no transaction left open

	// Crash after the commit of checkpoint 4 but before a later state
	// without it: the restored state names it again, and committing a
	// committed transaction again changes nothing.
	kill(s)
	states = snapshot(t, cp4)
	s, _ = e.start(states)
	s.CheckpointComplete(4)
	checkExactly(t, b, "out", want)

	// A rollback in the same process drops the open transaction (the
	// topology replays its tuples).
	execAll(s, vals("d", 0, 6)...)
	if err := s.PreSave(5); err != nil {
		t.Fatal(err)
	}
	execAll(s, "lost-in-rollback")
	cp5 := snapshot(t, states)
	late := s.tx.openPromise
	if err := s.InitState(snapshot(t, cp5)); err != nil {
		t.Fatal(err)
	}
	// The dropped transaction's client fails its records after Close
	// returns: that must not fail the next transaction.
	late(nil, kgo.ErrClientClosed)
	s.CheckpointComplete(5)
	want = append(want, vals("d", 0, 6)...)
	checkExactly(t, b, "out", want)
	execAll(s, vals("e", 0, 2)...)
	if err := s.PreSave(6); err != nil {
		t.Fatal(err)
	}
	s.CheckpointComplete(6)
	want = append(want, vals("e", 0, 2)...)
	checkExactly(t, b, "out", want)

	// A zombie (an old process still running) holds a transaction open
	// on one of the task's transactional ids. A restore fences it: its
	// transaction is aborted and it can no longer commit.
	zombie := b.Client(t, kgo.TransactionalID("egret-kt-sink-0-3"), kgo.TransactionTimeout(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kill(s)
	s, out = e.start(snapshot(t, states))
	execAll(s, "f0")
	if err := s.PreSave(7); err != nil {
		t.Fatal(err)
	}
	s.CheckpointComplete(7)
	want = append(want, "f0")
	checkExactly(t, b, "out", want)
	if err := zombie.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced zombie committed its transaction")
	}
	checkExactly(t, b, "out", want)
	if len(out.errs) != 0 || len(e.exit) != 0 {
		t.Fatalf("sink reported errors %v, exits %v", out.errs, e.exit)
	}

	// Cleanup (a graceful stop) aborts the open transaction: nothing
	// stays open to hold read_committed consumers back.
	execAll(s, "aborted-at-cleanup")
	s.Cleanup()
	checkExactly(t, b, "out", want)
}

// TestSinkTwoPhaseCommitRetriesAfterBrokerRestart: a commit that fails
// because the broker is down keeps the transaction in state; after the
// restart the next CheckpointComplete commits it, once.
func TestSinkTwoPhaseCommitRetriesAfterBrokerRestart(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "out", 2, nil)
	e := &eoSinks{t: t, cfg: SinkConfig{Brokers: []string{b.Addr}, Topic: "out", ProduceTimeout: 2 * time.Second}}
	states := api.NewStates()
	s, out := e.start(states)
	execAll(s, vals("x", 0, 3)...)
	if err := s.PreSave(1); err != nil {
		t.Fatal(err)
	}
	s.CheckpointComplete(1)
	execAll(s, vals("x", 3, 6)...)
	if err := s.PreSave(2); err != nil {
		t.Fatal(err)
	}
	b.Stop()
	s.CheckpointComplete(2) // fails: the broker is down
	if len(out.errs) == 0 {
		t.Fatal("a commit with the broker down reported no error")
	}
	if ids := preparedIDs(t, snapshot(t, states)); !slices.Equal(ids, []int64{2}) {
		t.Fatalf("prepared transactions after the failed commit %v, want [2]", ids)
	}
	execAll(s, "x6") // buffered while the broker is down
	if err := b.Resume(); err != nil {
		t.Fatal(err)
	}
	id := int64(3)
	until(t, "the transactions committed after the restart", func() {
		if err := s.PreSave(id); err == nil {
			s.CheckpointComplete(id)
		}
		id++
	}, func() bool { return len(preparedIDs(t, snapshot(t, states))) == 0 })
	checkExactly(t, b, "out", vals("x", 0, 7))
	if len(e.exit) != 0 {
		t.Fatalf("the sink asked to exit: %v", e.exit)
	}
}

// rss returns the resident set size of this process.
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// TestSinkLargeInterval: one checkpoint interval with more than 100 MiB
// of output commits, while the sink's memory stays bounded by its
// producer buffer (MaxBufferedBytes), not by the interval's output.
func TestSinkLargeInterval(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "big", 2, nil)
	const (
		size    = 64 << 10
		records = 1700 // 106 MiB
		buffer  = 8 << 20
	)
	e := &eoSinks{t: t, cfg: SinkConfig{Brokers: []string{b.Addr}, Topic: "big", ProduceTimeout: time.Minute, MaxBufferedBytes: buffer}}
	states := api.NewStates()
	s, out := e.start(states)
	runtime.GC()
	base, peak := rss(t), int64(0)
	for i := 0; i < records; i++ {
		v := make([]byte, size) // a fresh value per record, as tuples bring them
		copy(v, strconv.Itoa(i)+"/")
		s.Execute(api.NewTuple("up", "default", 1, sinkFields, strconv.Itoa(i), v))
		if i%50 == 0 {
			peak = max(peak, rss(t))
		}
	}
	if err := s.PreSave(1); err != nil {
		t.Fatal(err)
	}
	peak = max(peak, rss(t))
	growth := peak - base
	t.Logf("%d MiB through one interval: RSS %d MiB at the start, peak %d MiB (+%d MiB; producer buffer %d MiB)",
		records*size>>20, base>>20, peak>>20, growth>>20, buffer>>20)
	if growth > 64<<20 {
		t.Errorf("RSS grew by %d MiB for %d MiB of output: the sink's memory is not bounded by its buffer", growth>>20, records*size>>20)
	}
	s.CheckpointComplete(1)
	if len(out.errs) > 0 || len(e.exit) > 0 {
		t.Fatalf("errors %v, exits %v", out.errs, e.exit)
	}
	seen := map[string]bool{}
	until(t, "every record visible to read_committed", func() {
		clear(seen)
		for _, r := range readCommitted(t, b, "big", 2) {
			id, _, _ := strings.Cut(string(r.Value[:16]), "/")
			if len(r.Value) != size || seen[id] {
				t.Fatalf("record %s: %d bytes, seen before %v", id, len(r.Value), seen[id])
			}
			seen[id] = true
		}
	}, func() bool { return len(seen) == records })
}

// TestSinkFailsOverWhenSlotsStayHeld: every transactional id holds the
// transaction of a checkpoint that failed elsewhere (the checkpoint
// manager was down). A checkpoint the sink declines for want of an id is
// a warning; a second one with no completion between would repeat for
// ever (only a completion frees ids, and every checkpoint needs the sink),
// so the sink exits for a rollback; the restored checkpoint's transaction
// commits and the others are fenced.
func TestSinkFailsOverWhenSlotsStayHeld(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "held", 2, nil)
	e := &eoSinks{t: t, cfg: SinkConfig{Brokers: []string{b.Addr}, Topic: "held", ProduceTimeout: 10 * time.Second, TransactionSlots: 4}}
	states := api.NewStates()
	s, out := e.start(states)
	execAll(s, vals("a", 0, 3)...)
	if err := s.PreSave(1); err != nil {
		t.Fatal(err)
	}
	s.CheckpointComplete(1)
	want := vals("a", 0, 3)
	// Four ids: 1's stays held until a later checkpoint completes (a
	// restore may still name it), 2 and 3 prepare, 4's open transaction
	// takes the last.
	for i, cp := range []int64{2, 3} { // prepared; both checkpoints fail elsewhere
		execAll(s, vals(fmt.Sprint("b", i), 0, 2)...)
		if err := s.PreSave(cp); err != nil {
			t.Fatal(err)
		}
	}
	execAll(s, "c0")
	if err := s.PreSave(4); err == nil || !strings.Contains(err.Error(), "checkpoint 4 declined") {
		t.Fatalf("PreSave(4) with every id held: %v, want a decline", err)
	}
	if len(e.exit) != 0 {
		t.Fatalf("exit %v at the first decline", e.exit)
	}
	// A completion between two declines frees ids: no failover.
	s.CheckpointComplete(3)
	want = append(append(want, vals("b0", 0, 2)...), vals("b1", 0, 2)...)
	checkExactly(t, b, "held", want)
	if err := s.PreSave(5); err != nil {
		t.Fatalf("PreSave(5) after checkpoint 3 completed: %v", err)
	}
	cp5 := snapshot(t, states)
	s.CheckpointComplete(5)
	want = append(want, "c0")
	checkExactly(t, b, "held", want)

	// Now every id held again, and two checkpoints declined in a row.
	for i, cp := range []int64{6, 7} {
		execAll(s, fmt.Sprint("d", i))
		if err := s.PreSave(cp); err != nil {
			t.Fatal(err)
		}
	}
	execAll(s, "e0")
	if err := s.PreSave(8); err == nil {
		t.Fatal("PreSave(8) with every id held: no decline")
	}
	if err := s.PreSave(9); err == nil || !strings.Contains(err.Error(), "none can complete any more") {
		t.Fatalf("PreSave(9), the second decline in a row: %v", err)
	}
	if !slices.Equal(e.exit, []int{1}) || len(out.errs) == 0 {
		t.Fatalf("exits %v, errors reported %d: want one exit(1) with the reason reported", e.exit, len(out.errs))
	}
	// The rollback: checkpoint 5 is the last complete one; what the sink
	// wrote since is replayed, the held transactions fenced.
	kill(s)
	s, _ = e.start(snapshot(t, cp5))
	s.CheckpointComplete(5)
	execAll(s, "d0", "d1", "e0")
	if err := s.PreSave(10); err != nil {
		t.Fatal(err)
	}
	s.CheckpointComplete(10)
	checkExactly(t, b, "held", append(want, "d0", "d1", "e0"))
}

// TestSinkUnionRestore: the prepared transactions of two tasks, restored
// as the union of their states into one task (a restore with a lower
// parallelism), are all committed by it, once.
func TestSinkUnionRestore(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "out", 2, nil)
	e := &eoSinks{t: t, cfg: SinkConfig{Brokers: []string{b.Addr}, Topic: "out", ProduceTimeout: 10 * time.Second}}
	union := api.NewStates()
	var want []string
	for task := 0; task < 2; task++ {
		states := api.NewStates()
		s, _ := e.startTask(states, task, 2)
		vs := vals(fmt.Sprint("t", task, "-"), 0, 4)
		execAll(s, vs...)
		if err := s.PreSave(3); err != nil {
			t.Fatal(err)
		}
		want = append(want, vs...)
		kill(s)
		st, _ := api.NewState[string, PreparedTxn](snapshot(t, states), TransactionsState)
		u, _ := api.NewState[string, PreparedTxn](union, TransactionsState)
		st.Range(func(id string, p PreparedTxn) bool { u.Put(id, p); return true })
	}
	checkExactly(t, b, "out", nil)
	s, out := e.startTask(snapshot(t, union), 0, 1)
	s.CheckpointComplete(3)
	checkExactly(t, b, "out", want)
	if ids := preparedIDs(t, snapshot(t, union)); len(ids) != 2 {
		t.Fatalf("the union holds %v, want two transactions", ids)
	}
	if len(out.errs) > 0 || len(e.exit) > 0 {
		t.Fatalf("errors %v, exits %v", out.errs, e.exit)
	}
}

// TestSinkConfigKeys: the sink's settings are read from their config keys
// when the struct leaves them zero, and bad values are refused naming the
// key.
func TestSinkConfigKeys(t *testing.T) {
	ctx := newCtx(t, topology.EffectivelyOnce, "sink", 0, 1)
	ctx.config = map[string]string{KeyBrokers: "h:1", KeyTopic: "out", KeyTransactionalID: "p", KeyTransactionSlots: "7",
		KeyTransactionTimeout: "90s", KeyProduceTimeout: "3s", KeyMaxBufferedBytes: "4MiB"}
	var c SinkConfig
	if err := c.resolve(ctx); err != nil {
		t.Fatal(err)
	}
	if c.TransactionalID != "p" || c.TransactionSlots != 7 || c.TransactionTimeout != 90*time.Second || c.ProduceTimeout != 3*time.Second || c.MaxBufferedBytes != 4<<20 {
		t.Fatalf("resolved %+v", c)
	}
	c = SinkConfig{}
	ctx.config = map[string]string{KeyBrokers: "h:1", KeyTopic: "out"}
	if err := c.resolve(ctx); err != nil {
		t.Fatal(err)
	}
	if c.TransactionalID != "egret-kt-sink" || c.TransactionSlots != DefaultTransactionSlots || c.TransactionTimeout != DefaultTransactionTimeout || c.MaxBufferedBytes != DefaultMaxBufferedBytes {
		t.Fatalf("defaults: %+v", c)
	}
	for key, bad := range map[string]string{KeyTransactionSlots: "1", KeyTransactionTimeout: "soon", KeyMaxBufferedBytes: "lots"} {
		ctx.config = map[string]string{KeyBrokers: "h:1", KeyTopic: "out", key: bad}
		c = SinkConfig{}
		if err := c.resolve(ctx); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: %v, want an error naming the key", key, bad, err)
		}
	}
}

// TestSinkFailsOverWhenRecordsAreLost: a produce that fails for good
// (here: the topic does not exist) loses records of the open transaction
// that only a replay brings back, so the sink reports it and ends its
// process (the runtime then rolls the topology back).
func TestSinkFailsOverWhenRecordsAreLost(t *testing.T) {
	b := kafkatest.Start(t)
	e := &eoSinks{t: t, cfg: SinkConfig{Brokers: []string{b.Addr}, Topic: "missing", ProduceTimeout: time.Minute,
		ClientOptions: []kgo.Opt{kgo.UnknownTopicRetries(1)}}}
	states := api.NewStates()
	s, out := e.start(states)
	execAll(s, "x")
	if err := s.PreSave(1); err == nil {
		t.Fatal("PreSave prepared a transaction whose record failed")
	}
	if !slices.Equal(e.exit, []int{1}) || len(out.errs) != 1 || !strings.Contains(out.errs[0].Error(), "rolls back") {
		t.Fatalf("exits %v, errors %v; want exit 1 and one error saying the topology rolls back", e.exit, out.errs)
	}
	if ids := preparedIDs(t, snapshot(t, states)); len(ids) != 0 {
		t.Fatalf("the failed transaction is named in the state: %v", ids)
	}
}
