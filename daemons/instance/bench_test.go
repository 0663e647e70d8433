package instance

import (
	"context"
	"testing"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/core/tuple"
	"github.com/egret-stream/egret/daemons/wire"
)

// memTransport is an in-memory Transport for benchmarks and allocation
// tests: sent batches are counted and recycled at once, acking updates
// are counted and dropped.
type memTransport struct {
	inbox   chan Msg
	free    []*wire.Batch
	sent    int // tuples sent
	batches int
	acks    int // acking updates sent
}

func newMemTransport() *memTransport { return &memTransport{inbox: make(chan Msg, 16)} }

func (m *memTransport) Send(_ context.Context, b *wire.Batch) error {
	m.sent += b.Count
	m.batches++
	m.free = append(m.free, b)
	return nil
}
func (m *memTransport) Idle(uint32) bool { return false }
func (m *memTransport) NewBatch(dest uint32) *wire.Batch {
	if n := len(m.free); n > 0 {
		b := m.free[n-1]
		m.free = m.free[:n-1]
		b.Reset(dest)
		return b
	}
	return &wire.Batch{Dest: dest, Buf: make([]byte, 0, DefaultBatchBytes+DefaultBatchBytes/4)}
}
func (m *memTransport) Done(*wire.Batch) {}
func (m *memTransport) SendAcks(_ context.Context, _ wire.FrameType, u []wire.AckUpdate) error {
	m.acks += len(u)
	return nil
}
func (m *memTransport) Inbox() <-chan Msg { return m.inbox }

// constSpout emits (seq int64, "some data") per NextTuple, like the T1
// benchmark topology; with tracked set, with a message id.
type constSpout struct {
	api.BaseSpout
	out     api.SpoutCollector
	seq     int64
	tracked bool
}

func (s *constSpout) Open(_ api.Context, out api.SpoutCollector) error { s.out = out; return nil }
func (s *constSpout) NextTuple() {
	s.seq++
	var id any
	if s.tracked {
		id = s.seq
	}
	s.out.Emit(api.Values{s.seq, "some data"}, id)
}
func (s *constSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("seq", "value") }

// nullBolt counts its inputs; with ack set it acks each; with reuse set
// it lets the runtime reuse its tuples.
type nullBolt struct {
	api.BaseBolt
	out   api.BoltCollector
	n     int64
	ack   bool
	reuse bool
}

func (b *nullBolt) ReuseTuples() bool { return b.reuse }

func (b *nullBolt) Prepare(_ api.Context, out api.BoltCollector) error { b.out = out; return nil }
func (b *nullBolt) Execute(t api.Tuple) {
	b.n++
	if b.ack {
		b.out.Ack(t)
	}
}
func (b *nullBolt) DeclareOutputFields(api.OutputDeclarer) {}

// constNull builds the T1 topology (one spout task 1, one bolt task 2, in
// two containers) and one instance of component, running on a
// memTransport. Its user component is opened or prepared.
func constNull(tb testing.TB, mode topology.DeliveryMode, component string) (*Instance, *memTransport, api.Spout, *nullBolt) {
	tb.Helper()
	bolt := &nullBolt{ack: mode == topology.AtLeastOnce}
	spout := &constSpout{tracked: mode == topology.AtLeastOnce}
	b := api.NewTopologyBuilder("constnull")
	b.SetDeliveryMode(mode)
	b.SetSpout("const", func() api.Spout { return spout }, 1).SetMaxSpoutPending(0)
	b.SetBolt("null", func() api.Bolt { return bolt }, 1).ShuffleGrouping("const")
	in, mt := newInstance(tb, b, component)
	in.ctx = context.Background()
	uctx := &userContext{in: in}
	if component == "const" {
		if err := spout.Open(uctx, &spoutCollector{em: &in.em}); err != nil {
			tb.Fatal(err)
		}
	} else if err := bolt.Prepare(uctx, &boltCollector{em: &in.em}); err != nil {
		tb.Fatal(err)
	}
	return in, mt, spout, bolt
}

// newInstance builds b's topology with one container per task and the
// instance of component's first task on a memTransport.
func newInstance(tb testing.TB, b *api.TopologyBuilder, component string) (*Instance, *memTransport) {
	tb.Helper()
	top, err := b.Build()
	if err != nil {
		tb.Fatal(err)
	}
	var cs []plan.Container
	for i, in := range plan.TaskIDs(top.Logical) {
		cs = append(cs, plan.Container{ID: i + 1, Instances: []plan.Instance{in}})
	}
	layout := (&plan.PackingPlan{Containers: cs}).Layout()
	mt := newMemTransport()
	in, err := New(Config{Topology: top, Layout: layout, TaskID: layout.Tasks[component][0], Transport: mt})
	if err != nil {
		tb.Fatal(err)
	}
	return in, mt
}

// constBatch encodes a batch of n T1 records from task src on stream 1,
// with a root per record when tracked.
func constBatch(tb testing.TB, n int, src uint32, tracked bool) *wire.Batch {
	tb.Helper()
	b := &wire.Batch{}
	var enc []byte
	for i := range n {
		var err error
		enc, err = tuple.AppendValues(enc[:0], []any{int64(1000000 + i), "some data"}, nil)
		if err != nil {
			tb.Fatal(err)
		}
		h := wire.Header{SrcTask: src, Stream: 1}
		if tracked {
			h.Edge = uint64(i)*0x9E3779B97F4A7C15 | 1
			h.Roots = []wire.Root{{Task: src, ID: uint64(i) + 77}}
		}
		b.Buf = wire.AppendRecord(b.Buf, &h, enc)
		b.Count++
	}
	return b
}

// BenchmarkBoltBatch measures the bolt side of T1 per tuple: decoding a
// batch of records and calling Execute on each (ns/op and B/op are per
// tuple), with fresh tuples and with reused ones (api.TupleReuser).
func BenchmarkBoltBatch(b *testing.B) {
	for _, mode := range []topology.DeliveryMode{topology.AtMostOnce, topology.AtLeastOnce} {
		for _, reuse := range []bool{false, true} {
			name := string(mode)
			if reuse {
				name += "/reuse"
			}
			b.Run(name, func(b *testing.B) { benchBoltBatch(b, mode, reuse) })
		}
	}
}

func benchBoltBatch(b *testing.B, mode topology.DeliveryMode, reuse bool) {
	in, _, _, bolt := constNull(b, mode, "null")
	bolt.reuse = reuse
	const n = 1024
	batch := constBatch(b, n, 1, mode == topology.AtLeastOnce)
	exec := in.boltExecutor(bolt)
	b.ReportAllocs()
	b.SetBytes(int64(len(batch.Buf) / n))
	b.ResetTimer()
	for done := 0; done < b.N; done += n {
		in.executeBatch(batch.Buf, exec)
	}
	if bolt.n < int64(b.N) {
		b.Fatalf("executed %d tuples, want %d", bolt.n, b.N)
	}
}

// BenchmarkSpoutEmit measures the spout side of T1 per tuple: NextTuple,
// routing, encoding and batching.
func BenchmarkSpoutEmit(b *testing.B) {
	for _, mode := range []topology.DeliveryMode{topology.AtMostOnce, topology.AtLeastOnce} {
		b.Run(string(mode), func(b *testing.B) {
			in, mt, spout, _ := constNull(b, mode, "const")
			b.ReportAllocs()
			for b.Loop() {
				spout.NextTuple()
				in.em.flushIfDue(in.cfg.FlushInterval)
				if sa := in.em.ack; sa != nil && sa.spout.n >= 4096 {
					// Settled by nobody: free every slot.
					sp := sa.spout
					clear(sp.slots)
					sp.slots, sp.free, sp.n = sp.slots[:0], sp.free[:0], 0
					sp.order, sp.head = sp.order[:0], 0
				}
			}
			in.em.flushAll()
			if mt.sent != b.N {
				b.Fatalf("sent %d tuples, want %d", mt.sent, b.N)
			}
		})
	}
}
