package inproc

import (
	"bytes"
	"strconv"
	"sync"
	"testing"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// reusingSpout emits n tuples (i, decimal i as bytes) through one Values
// slice and one byte buffer, both overwritten after every emit.
type reusingSpout struct {
	api.BaseSpout
	n    int
	st   *ackStats
	out  api.SpoutCollector
	next int
	vals api.Values
	buf  []byte
}

func (s *reusingSpout) Open(_ api.Context, out api.SpoutCollector) error {
	s.out, s.vals = out, make(api.Values, 2)
	return nil
}

func (s *reusingSpout) NextTuple() {
	if s.next == s.n {
		return
	}
	id := s.next
	s.next++
	s.buf = strconv.AppendInt(s.buf[:0], int64(id), 10)
	s.vals[0], s.vals[1] = id, s.buf
	s.out.Emit(s.vals, id)
	// What the collector would see if it had kept either.
	s.vals[0], s.vals[1] = -1, nil
	copy(s.buf, "xxxxxxxxxx")
}

func (s *reusingSpout) Ack(msgID any) {
	s.st.mu.Lock()
	s.st.acked[msgID.(int)]++
	s.st.mu.Unlock()
}

func (s *reusingSpout) Fail(msgID any) {
	s.st.mu.Lock()
	s.st.failed[msgID.(int)]++
	s.st.mu.Unlock()
}

func (s *reusingSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("id", "text") }

// reusingBolt re-emits each tuple twice (parts 0 and 1) through one
// Values slice, one byte buffer and one anchors array, all overwritten
// after every emit, then acks it.
type reusingBolt struct {
	api.BaseBolt
	out    api.BoltCollector
	vals   api.Values
	buf    []byte
	anchor [1]api.Tuple
	// reuse makes it an api.TupleReuser.
	reuse bool
}

func (b *reusingBolt) ReuseTuples() bool { return b.reuse }

func (b *reusingBolt) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out, b.vals = out, make(api.Values, 3)
	return nil
}

func (b *reusingBolt) Execute(t api.Tuple) {
	for part := range 2 {
		b.buf = append(b.buf[:0], t.Bytes(1)...)
		b.vals[0], b.vals[1], b.vals[2] = t.Value(0), b.buf, part
		b.anchor[0] = t
		b.out.Emit(b.vals, b.anchor[:]...)
		b.vals[0], b.vals[1], b.vals[2], b.anchor[0] = -1, nil, -1, nil
		copy(b.buf, "yyyyyyyyyy")
	}
	b.out.Ack(t)
}

func (b *reusingBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("id", "text", "part") }

// textBolt records every (id, text, part) it executes and acks it. With
// reuse set it is an api.TupleReuser that also keeps the []byte of every
// tuple and records the distinct Tuple values it was given.
type textBolt struct {
	api.BaseBolt
	out   api.BoltCollector
	mu    *sync.Mutex
	seen  map[[2]int]string
	bad   *[]string
	reuse bool
	kept  map[[2]int][]byte
	objs  map[api.Tuple]bool
}

func (b *textBolt) ReuseTuples() bool { return b.reuse }

func (b *textBolt) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }

func (b *textBolt) Execute(t api.Tuple) {
	id, _ := t.Value(0).(int)
	part, _ := t.Value(2).(int)
	text := t.Bytes(1)
	b.mu.Lock()
	if !bytes.Equal(text, strconv.AppendInt(nil, int64(id), 10)) {
		*b.bad = append(*b.bad, "id "+strconv.Itoa(id)+" part "+strconv.Itoa(part)+" arrived with text "+strconv.Quote(string(text)))
	}
	b.seen[[2]int{id, part}] += string(text) + ";"
	if b.reuse {
		b.kept[[2]int{id, part}] = text
		b.objs[t] = true
	}
	b.mu.Unlock()
	b.out.Ack(t)
}

func (b *textBolt) DeclareOutputFields(api.OutputDeclarer) {}

// TestEmitKeepsNoValues: spouts and bolts may reuse their Values slice,
// the buffers in it and their anchors slice for every emit (the API's
// promise): every tuple arrives with the values it had when emitted, once,
// and every tree completes.
func TestEmitKeepsNoValues(t *testing.T) {
	const n = 3000
	st := newAckStats()
	var mu sync.Mutex
	seen := map[[2]int]string{}
	var bad []string
	b := api.NewTopologyBuilder("reuse")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetSpout("src", func() api.Spout { return &reusingSpout{n: n, st: st} }, 1).SetMaxSpoutPending(500)
	b.SetBolt("copy", func() api.Bolt { return &reusingBolt{} }, 2).FieldsGrouping("src", "text")
	b.SetBolt("sink", func() api.Bolt { return &textBolt{mu: &mu, seen: seen, bad: &bad} }, 2).FieldsGrouping("copy", "id")
	r := newDrainingRunner(t, b)
	runUntil(t, r, func() bool { a, f := st.snapshot(); return a+f == n }, nil)
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("%d tuples changed after their emit, e.g. %s", len(bad), bad[0])
	}
	for id := range n {
		for part := range 2 {
			want := strconv.Itoa(id) + ";"
			if got := seen[[2]int{id, part}]; got != want {
				t.Fatalf("id %d part %d: received %q, want %q (once)", id, part, got, want)
			}
		}
		if st.acked[id] != 1 {
			t.Fatalf("message %d acked %d times (failed %d), want once", id, st.acked[id], st.failed[id])
		}
	}
}

// TestTupleReuse: bolts that reuse their tuples (api.TupleReuser) see
// every tuple once with its values, the []byte values they keep stay
// intact after their tuple was overwritten, every tree completes, and each
// task is given one Tuple value for all its tuples.
func TestTupleReuse(t *testing.T) {
	const n = 3000
	st := newAckStats()
	var mu sync.Mutex
	seen := map[[2]int]string{}
	kept := map[[2]int][]byte{}
	var bad []string
	var sinks []*textBolt
	b := api.NewTopologyBuilder("reuse")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetSpout("src", func() api.Spout { return &reusingSpout{n: n, st: st} }, 1).SetMaxSpoutPending(500)
	b.SetBolt("copy", func() api.Bolt { return &reusingBolt{reuse: true} }, 2).FieldsGrouping("src", "text")
	b.SetBolt("sink", func() api.Bolt {
		mu.Lock()
		defer mu.Unlock()
		s := &textBolt{mu: &mu, seen: seen, bad: &bad, reuse: true, kept: kept, objs: map[api.Tuple]bool{}}
		sinks = append(sinks, s)
		return s
	}, 2).FieldsGrouping("copy", "id")
	r := newDrainingRunner(t, b)
	runUntil(t, r, func() bool { a, f := st.snapshot(); return a+f == n }, nil)
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("%d tuples arrived with other values, e.g. %s", len(bad), bad[0])
	}
	for id := range n {
		for part := range 2 {
			want := strconv.Itoa(id)
			if got := seen[[2]int{id, part}]; got != want+";" {
				t.Fatalf("id %d part %d: received %q, want %q (once)", id, part, got, want+";")
			}
			if got := string(kept[[2]int{id, part}]); got != want {
				t.Fatalf("id %d part %d: the kept []byte became %q, want %q", id, part, got, want)
			}
		}
		if st.acked[id] != 1 {
			t.Fatalf("message %d acked %d times (failed %d), want once", id, st.acked[id], st.failed[id])
		}
	}
	for i, s := range sinks {
		if len(s.objs) > 1 {
			t.Fatalf("sink %d was given %d Tuple values; a reusing bolt gets one", i, len(s.objs))
		}
	}
}

// forgetfulBolt reuses tuples and acks only those with an even id: the
// runtime must fail the others when Execute returns.
type forgetfulBolt struct {
	api.BaseBolt
	out api.BoltCollector
}

func (b *forgetfulBolt) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }
func (b *forgetfulBolt) ReuseTuples() bool                                  { return true }
func (b *forgetfulBolt) DeclareOutputFields(api.OutputDeclarer)             {}
func (b *forgetfulBolt) Execute(t api.Tuple) {
	if id, _ := t.Value(0).(int); id%2 == 0 {
		b.out.Ack(t)
	}
}

// TestTupleReuseUnsettled: a tuple a reusing bolt leaves neither acked
// nor failed is failed when Execute returns (not after the 30 s message
// timeout) and reported as an error: nothing is acked that was not.
func TestTupleReuseUnsettled(t *testing.T) {
	const n = 1000
	st := newAckStats()
	b := api.NewTopologyBuilder("forgetful")
	b.SetDeliveryMode(topology.AtLeastOnce)
	b.SetSpout("src", func() api.Spout { return &reusingSpout{n: n, st: st} }, 1).SetMaxSpoutPending(100)
	b.SetBolt("sink", func() api.Bolt { return &forgetfulBolt{} }, 1).ShuffleGrouping("src")
	r := newDrainingRunner(t, b)
	sum := runUntil(t, r, func() bool { a, f := st.snapshot(); return a+f == n }, nil)
	for id := range n {
		wantAcked, wantFailed := 1-id%2, id%2
		if st.acked[id] != wantAcked || st.failed[id] != wantFailed {
			t.Fatalf("message %d acked %d, failed %d times; want %d, %d", id, st.acked[id], st.failed[id], wantAcked, wantFailed)
		}
	}
	if c := sum.Component("sink"); c == nil || c.Errors != n/2 {
		t.Fatalf("sink summary %+v; want %d errors (one per unsettled tuple)", c, n/2)
	}
	if c := sum.Component("src"); c.TimedOut != 0 {
		t.Fatalf("%d roots timed out; the runtime should have failed them", c.TimedOut)
	}
}

// badValueSpout emits (i, "v<i>") for i < n, and every third tuple with a
// value no codec encodes instead of its text.
type badValueSpout struct {
	api.BaseSpout
	out api.SpoutCollector
	n   int
	i   int
}

func (s *badValueSpout) Open(_ api.Context, out api.SpoutCollector) error { s.out = out; return nil }

func (s *badValueSpout) NextTuple() {
	if s.i == s.n {
		return
	}
	var text any = "v" + strconv.Itoa(s.i)
	if s.i%3 == 0 {
		text = make(chan int)
	}
	s.out.Emit(api.Values{s.i, text}, nil)
	s.i++
}

func (s *badValueSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("id", "text") }

// recordingBolt records the (id, text) tuples it receives.
type recordingBolt struct {
	api.BaseBolt
	mu   *sync.Mutex
	seen map[int][]string
}

func (b *recordingBolt) Execute(t api.Tuple) {
	b.mu.Lock()
	b.seen[int(t.Int64(0))] = append(b.seen[int(t.Int64(0))], t.String(1))
	b.mu.Unlock()
}

func (b *recordingBolt) DeclareOutputFields(api.OutputDeclarer) {}

// TestUnencodableEmitDroppedAlone: an at-most-once emit toward one task is
// encoded in place in its batch; an emit whose value cannot be encoded is
// dropped and counted, and the tuples emitted before and after it in the
// same batch arrive intact, once.
func TestUnencodableEmitDroppedAlone(t *testing.T) {
	const n = 3000
	var mu sync.Mutex
	seen := map[int][]string{}
	b := api.NewTopologyBuilder("badvalue")
	b.SetSpout("src", func() api.Spout { return &badValueSpout{n: n} }, 1)
	b.SetBolt("sink", func() api.Bolt { return &recordingBolt{mu: &mu, seen: seen} }, 1).ShuffleGrouping("src")
	r := newDrainingRunner(t, b)
	s := runUntil(t, r, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == n-n/3 }, nil)
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		got := seen[i]
		if i%3 == 0 {
			if len(got) != 0 {
				t.Fatalf("tuple %d, whose value cannot be encoded, arrived as %q", i, got)
			}
			continue
		}
		if want := "v" + strconv.Itoa(i); len(got) != 1 || got[0] != want {
			t.Fatalf("tuple %d arrived as %q, want [%q]", i, got, want)
		}
	}
	for _, c := range s.Components {
		if c.Name == "src" && (c.Dropped != n/3 || c.Errors != n/3) {
			t.Errorf("spout counted %d dropped and %d errors, want %d each", c.Dropped, c.Errors, n/3)
		}
	}
}
