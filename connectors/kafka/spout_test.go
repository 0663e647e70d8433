package kafka

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/internal/kafkatest"
)

func openSpout(t *testing.T, cfg SpoutConfig, ctx *testCtx) (*Spout, *spoutOut) {
	t.Helper()
	s := NewSpout(cfg)().(*Spout)
	out := &spoutOut{}
	if err := s.Open(ctx, out); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s, out
}

func TestSpoutAtLeastOnceCommitsOnlyTheContiguousAckedPrefix(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "in", 1, nil)
	produce(t, b, "in", 0, vals("v", 0, 10)...)
	adm := kadm.NewClient(b.Client(t))

	s, out := openSpout(t, SpoutConfig{Brokers: []string{b.Addr}, Topics: []string{"in"}, Group: "g-alo", CommitInterval: 20 * time.Millisecond},
		newCtx(t, topology.AtLeastOnce, "spout", 0, 1))
	until(t, "10 records emitted", s.NextTuple, func() bool { return len(out.emitted()) >= 10 })
	em := out.emitted()
	for i, e := range em {
		if e.offset() != int64(i) || e.value() != vals("v", i, i+1)[0] {
			t.Fatalf("emission %d = offset %d value %q", i, e.offset(), e.value())
		}
		if e.id == nil {
			t.Fatalf("emission %d has no message id in at-least-once mode", i)
		}
	}
	// Ack everything but offset 4, which fails.
	for _, e := range em {
		if e.offset() == 4 {
			s.Fail(e.id)
		} else {
			s.Ack(e.id)
		}
	}
	out.reset()
	until(t, "offset 4 re-emitted", s.NextTuple, func() bool { return len(out.emitted()) > 0 })
	re := out.emitted()
	if len(re) != 1 || re[0].offset() != 4 || re[0].value() != "v4" {
		t.Fatalf("re-emitted %v, want only offset 4 (v4)", re)
	}
	// The commit stops at the failed record while it is pending.
	until(t, "offset 4 committed", s.NextTuple, func() bool { return committed(t, adm, "g-alo", "in", 0) == 4 })
	for i := 0; i < 20; i++ { // several commit intervals
		s.NextTuple()
		time.Sleep(5 * time.Millisecond)
	}
	if c := committed(t, adm, "g-alo", "in", 0); c != 4 {
		t.Fatalf("committed %d while offset 4 is pending, want 4", c)
	}
	s.Ack(re[0].id)
	until(t, "offset 10 committed", s.NextTuple, func() bool { return committed(t, adm, "g-alo", "in", 0) == 10 })
	if n := len(out.emitted()); n != 1 {
		t.Fatalf("emitted %d records after the retry, want none", n-1)
	}

	// A new spout of the group resumes after the committed prefix.
	s.Close()
	produce(t, b, "in", 0, "v10")
	s2, out2 := openSpout(t, SpoutConfig{Brokers: []string{b.Addr}, Topics: []string{"in"}, Group: "g-alo"},
		newCtx(t, topology.AtLeastOnce, "spout", 0, 1))
	until(t, "the new record", s2.NextTuple, func() bool { return len(out2.emitted()) >= 1 })
	if e := out2.emitted()[0]; e.offset() != 10 {
		t.Fatalf("the restarted spout began at offset %d, want 10", e.offset())
	}
}

func TestSpoutAtMostOnceCommitsPeriodically(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "in", 1, nil)
	produce(t, b, "in", 0, vals("v", 0, 5)...)
	adm := kadm.NewClient(b.Client(t))
	cfg := SpoutConfig{Brokers: []string{b.Addr}, Topics: []string{"in"}, Group: "g-amo", CommitInterval: 20 * time.Millisecond}
	s, out := openSpout(t, cfg, newCtx(t, topology.AtMostOnce, "spout", 0, 1))
	until(t, "5 emitted", s.NextTuple, func() bool { return len(out.emitted()) >= 5 })
	for _, e := range out.emitted() {
		if e.id != nil {
			t.Fatalf("at-most-once emission with message id %v", e.id)
		}
	}
	// Nothing is acked, yet the emitted offsets are committed.
	until(t, "offset 5 committed", s.NextTuple, func() bool { return committed(t, adm, "g-amo", "in", 0) == 5 })
	produce(t, b, "in", 0, "v5", "v6")
	until(t, "offset 7 committed", s.NextTuple, func() bool { return committed(t, adm, "g-amo", "in", 0) == 7 })
	if n := len(out.emitted()); n != 7 {
		t.Fatalf("emitted %d, want 7", n)
	}
}

// positionsOf reads the positions state of states.
func positionsOf(t *testing.T, states *api.States) map[string]int64 {
	t.Helper()
	st, err := api.NewState[string, int64](states, PositionsState)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	st.Range(func(k string, v int64) bool { m[k] = v; return true })
	return m
}

// snapshot encodes states as the runtime saves them and decodes them as
// it restores them.
func snapshot(t *testing.T, states *api.States) *api.States {
	t.Helper()
	b, err := states.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	s, err := api.UnmarshalStates(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func firstOffsets(em []emission) map[int32]int64 {
	first := map[int32]int64{}
	for _, e := range em {
		if o, ok := first[e.partition()]; !ok || e.offset() < o {
			first[e.partition()] = e.offset()
		}
	}
	return first
}

func TestSpoutEffectivelyOnceRestoresPositions(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "in", 2, nil)
	produce(t, b, "in", 0, vals("a", 0, 10)...)
	produce(t, b, "in", 1, vals("b", 0, 10)...)
	cfg := SpoutConfig{Brokers: []string{b.Addr}, Topics: []string{"in"}, Group: "ignored-in-eo"}

	s, out := openSpout(t, cfg, newCtx(t, topology.EffectivelyOnce, "spout", 0, 1))
	states := api.NewStates()
	if err := s.InitState(states); err != nil {
		t.Fatal(err)
	}
	until(t, "20 emitted", s.NextTuple, func() bool { return len(out.emitted()) >= 20 })
	for _, e := range out.emitted() {
		if e.id != nil {
			t.Fatalf("effectively-once emission with message id %v", e.id)
		}
	}
	if err := s.PreSave(1); err != nil {
		t.Fatal(err)
	}
	saved := snapshot(t, states)
	if got := positionsOf(t, snapshot(t, states)); got["in/0"] != 10 || got["in/1"] != 10 || len(got) != 2 {
		t.Fatalf("positions after 20 records = %v, want in/0 and in/1 at 10", got)
	}

	// More records flow after the checkpoint, then the topology rolls
	// back to it: the spout re-emits from the saved positions.
	produce(t, b, "in", 0, vals("a", 10, 15)...)
	produce(t, b, "in", 1, vals("b", 10, 15)...)
	until(t, "30 emitted", s.NextTuple, func() bool { return len(out.emitted()) >= 30 })
	out.reset()
	if err := s.InitState(saved); err != nil {
		t.Fatal(err)
	}
	until(t, "10 re-emitted", s.NextTuple, func() bool { return len(out.emitted()) >= 10 })
	if f := firstOffsets(out.emitted()); f[0] != 10 || f[1] != 10 {
		t.Fatalf("after the rollback the spout began at %v, want offset 10 of both partitions", f)
	}
	for i := 0; i < 50; i++ {
		s.NextTuple()
	}
	if n := len(out.emitted()); n != 10 {
		t.Fatalf("re-emitted %d records after the rollback, want 10", n)
	}

	// An explicit partition list restricts the assignment.
	only1 := cfg
	only1.Partitions = map[string][]int32{"in": {1}}
	s1, out1 := openSpout(t, only1, newCtx(t, topology.EffectivelyOnce, "spout", 0, 1))
	if err := s1.InitState(api.NewStates()); err != nil {
		t.Fatal(err)
	}
	until(t, "partition 1 emitted", s1.NextTuple, func() bool { return len(out1.emitted()) >= 15 })
	for i := 0; i < 50; i++ {
		s1.NextTuple()
	}
	if f := firstOffsets(out1.emitted()); len(f) != 1 || f[1] != 0 || len(out1.emitted()) != 15 {
		t.Fatalf("with Partitions {in: [1]} the spout emitted %d records from %v, want the 15 of partition 1", len(out1.emitted()), f)
	}

	// Restores with another parallelism: each task is given the union of
	// the positions (in/0 at 3, in/1 at 7), starts every partition it
	// owns where the union says, and keeps only its own positions.
	st := api.NewStates()
	pos, _ := api.NewState[string, int64](st, PositionsState)
	pos.Put("in/0", 3)
	pos.Put("in/1", 7)
	union := snapshot(t, st)
	start := map[int32]int64{0: 3, 1: 7}
	for _, tasks := range []int{2, 3} {
		owned := map[int32]bool{}
		for idx := 0; idx < tasks; idx++ {
			want := map[int32]int64{}
			for p := int32(0); p < 2; p++ {
				if owner("in", p, tasks) == idx {
					want[p] = start[p]
					owned[p] = true
				}
			}
			s, out := openSpout(t, cfg, newCtx(t, topology.EffectivelyOnce, "spout", idx, tasks))
			st := snapshot(t, union)
			if err := s.InitState(st); err != nil {
				t.Fatal(err)
			}
			n := 0
			for p := range want {
				n += 15 - int(want[p])
			}
			until(t, "records emitted", s.NextTuple, func() bool { return len(out.emitted()) >= n })
			for i := 0; i < 50; i++ {
				s.NextTuple()
			}
			if f := firstOffsets(out.emitted()); !maps.Equal(f, want) || len(out.emitted()) != n {
				t.Fatalf("%d tasks: task %d began at %v and emitted %d, want %v and %d", tasks, idx, f, len(out.emitted()), want, n)
			}
			kept := positionsOf(t, snapshot(t, st))
			for k := range kept {
				if p, _ := strconv.Atoi(k[len("in/"):]); owner("in", int32(p), tasks) != idx {
					t.Fatalf("%d tasks: task %d kept the position of %s, which it does not own (%v)", tasks, idx, k, kept)
				}
			}
		}
		if len(owned) != 2 {
			t.Fatalf("%d tasks: partitions owned %v, want both", tasks, owned)
		}
	}
}

// TestSpoutOwnerIsStable: a partition's owner does not change when
// partitions or topics are added, and every partition has one owner.
func TestSpoutOwnerIsStable(t *testing.T) {
	for tasks := 1; tasks <= 9; tasks++ {
		counts := make([]int, tasks)
		for _, topic := range []string{"a", "orders", "sentences", "x-1"} {
			for p := int32(0); p < 64; p++ {
				o := owner(topic, p, tasks)
				if o < 0 || o >= tasks {
					t.Fatalf("owner(%s, %d, %d) = %d", topic, p, tasks, o)
				}
				if o != owner(topic, p, tasks) {
					t.Fatal("owner is not deterministic")
				}
				counts[o]++
			}
		}
		for i, c := range counts {
			if c < 4*64/tasks-4 || c > 4*64/tasks+4 {
				t.Errorf("%d tasks: task %d owns %d of 256 partitions", tasks, i, c)
			}
		}
	}
}

func TestSpoutSurvivesBrokerRestart(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "in", 1, nil)
	produce(t, b, "in", 0, vals("v", 0, 10)...)
	adm := kadm.NewClient(b.Client(t))
	s, out := openSpout(t, SpoutConfig{Brokers: []string{b.Addr}, Topics: []string{"in"}, Group: "g-restart", CommitInterval: 20 * time.Millisecond},
		newCtx(t, topology.AtLeastOnce, "spout", 0, 1))
	ackAll := func() {
		s.NextTuple()
		for _, e := range out.emitted() {
			s.Ack(e.id)
		}
	}
	until(t, "10 emitted and committed", ackAll, func() bool {
		return len(out.emitted()) >= 10 && committed(t, adm, "g-restart", "in", 0) == 10
	})
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	produce(t, b, "in", 0, vals("v", 10, 20)...)
	until(t, "20 emitted and committed after the restart", ackAll, func() bool {
		return len(out.emitted()) >= 20 && committed(t, adm, "g-restart", "in", 0) == 20
	})
	var got []string
	for _, e := range out.emitted() {
		got = append(got, e.value())
	}
	if !slices.Equal(got, vals("v", 0, 20)) {
		t.Fatalf("emitted %v, want v0..v19 once each", got)
	}
}

func TestSpoutGroupRebalanceBetweenTwoSpouts(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "in", 4, nil)
	for p := int32(0); p < 4; p++ {
		produce(t, b, "in", p, vals("r", int(p)*10, int(p)*10+10)...)
	}
	adm := kadm.NewClient(b.Client(t))
	cfg := SpoutConfig{Brokers: []string{b.Addr}, Topics: []string{"in"}, Group: "g-rb", CommitInterval: 20 * time.Millisecond}
	a, outA := openSpout(t, cfg, newCtx(t, topology.AtLeastOnce, "spout", 0, 2))
	seen := map[string]int{}
	drive := func(s *Spout, out *spoutOut) {
		s.NextTuple()
		for _, e := range out.emitted() {
			s.Ack(e.id)
			seen[e.value()]++
		}
		out.reset()
	}
	allCommitted := func(want int64) bool {
		for p := int32(0); p < 4; p++ {
			if committed(t, adm, "g-rb", "in", p) != want {
				return false
			}
		}
		return true
	}
	until(t, "A reads and commits all 40", func() { drive(a, outA) }, func() bool { return len(seen) == 40 && allCommitted(10) })

	// B joins: the group splits the partitions between A and B.
	bs, outB := openSpout(t, cfg, newCtx(t, topology.AtLeastOnce, "spout", 1, 2))
	owned := func(s *Spout) map[topicPartition]bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		m := map[topicPartition]bool{}
		for tp := range s.parts {
			m[tp] = true
		}
		return m
	}
	until(t, "both spouts own two partitions", func() { drive(a, outA); drive(bs, outB) }, func() bool {
		oa, ob := owned(a), owned(bs)
		if len(oa) != 2 || len(ob) != 2 {
			return false
		}
		for tp := range oa {
			if ob[tp] {
				return false
			}
		}
		return true
	})
	clear(seen)
	var fromA, fromB int
	for p := int32(0); p < 4; p++ {
		produce(t, b, "in", p, vals("s", int(p)*10, int(p)*10+10)...)
	}
	until(t, "A and B read and commit the next 40", func() {
		a.NextTuple()
		for _, e := range outA.emitted() {
			a.Ack(e.id)
			seen[e.value()]++
			fromA++
		}
		outA.reset()
		bs.NextTuple()
		for _, e := range outB.emitted() {
			bs.Ack(e.id)
			seen[e.value()]++
			fromB++
		}
		outB.reset()
	}, func() bool { return len(seen) == 40 && allCommitted(20) })
	if fromA != 20 || fromB != 20 {
		t.Fatalf("A emitted %d and B %d of the 40 new records, want 20 each (each partition read by one spout)", fromA, fromB)
	}
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("%s emitted %d times in a stable group", v, n)
		}
	}

	// A leaves: B takes every partition and resumes from the commits.
	a.Close()
	clear(seen)
	for p := int32(0); p < 4; p++ {
		produce(t, b, "in", p, vals("t", int(p)*10, int(p)*10+10)...)
	}
	until(t, "B reads and commits the last 40", func() { drive(bs, outB) }, func() bool { return len(seen) == 40 && allCommitted(30) })
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("%s emitted %d times after A left", v, n)
		}
	}
}

// TestSpoutRebalanceDropsPendingRecordsOfRevokedPartitions: records A
// emitted but did not ack in a partition the group moves to B are
// forgotten by A (a late ack is ignored) and emitted again by B.
func TestSpoutRebalanceDropsPendingRecordsOfRevokedPartitions(t *testing.T) {
	b := kafkatest.Start(t)
	b.CreateTopic(t, "in", 2, nil)
	produce(t, b, "in", 0, "u0")
	produce(t, b, "in", 1, "u1")
	adm := kadm.NewClient(b.Client(t))
	cfg := SpoutConfig{Brokers: []string{b.Addr}, Topics: []string{"in"}, Group: "g-rv", CommitInterval: 20 * time.Millisecond}
	ctxA := newCtx(t, topology.AtLeastOnce, "spout", 0, 2)
	a, outA := openSpout(t, cfg, ctxA)
	until(t, "A emits both records", a.NextTuple, func() bool { return len(outA.emitted()) == 2 })
	pending := outA.emitted() // not acked

	bs, outB := openSpout(t, cfg, newCtx(t, topology.AtLeastOnce, "spout", 1, 2))
	owns := func(s *Spout) []int32 {
		s.mu.Lock()
		defer s.mu.Unlock()
		var ps []int32
		for tp := range s.parts {
			ps = append(ps, tp.partition)
		}
		return ps
	}
	until(t, "B owns one partition and re-emits its record", func() {
		a.NextTuple()
		bs.NextTuple()
		for _, e := range outB.emitted() {
			bs.Ack(e.id)
		}
	}, func() bool { return len(owns(a)) == 1 && len(owns(bs)) == 1 && len(outB.emitted()) == 1 })
	moved := owns(bs)[0]
	if e := outB.emitted()[0]; e.partition() != moved || e.value() != fmt.Sprintf("u%d", moved) {
		t.Fatalf("B emitted %s of partition %d, want the record of partition %d", e.value(), e.partition(), moved)
	}
	if ctxA.Counter("kafka.dropped").Value() < 1 {
		t.Fatal("A did not drop the pending record of the revoked partition")
	}
	// A's late acks: the one of the moved partition is ignored, the
	// other commits A's partition.
	for _, e := range pending {
		a.Ack(e.id)
	}
	kept := 1 - moved
	until(t, "both partitions committed at 1", func() { a.NextTuple(); bs.NextTuple() }, func() bool {
		return committed(t, adm, "g-rv", "in", kept) == 1 && committed(t, adm, "g-rv", "in", moved) == 1
	})
	if got := owns(a); len(got) != 1 || got[0] != kept {
		t.Fatalf("A owns %v after the late acks, want only %d", got, kept)
	}
}
