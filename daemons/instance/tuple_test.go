package instance

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/core/tuple"
	"github.com/egret-stream/egret/daemons/wire"
)

// decodeOne encodes values as one record of stream 1 from task 1 and
// decodes it as the bolt of constNull does.
func decodeOne(t *testing.T, in *Instance, a *arena, values []any) *inTuple {
	t.Helper()
	enc, err := tuple.AppendValues(nil, values, nil)
	if err != nil {
		t.Fatal(err)
	}
	buf := wire.AppendRecord(nil, &wire.Header{SrcTask: 1, Stream: 1}, enc)
	var rd wire.RecordReader
	var h wire.Header
	rd.Reset(buf)
	it, err := in.decode(&rd, &h, a)
	if err != nil {
		t.Fatal(err)
	}
	clear(buf) // the transport reuses the batch: the tuple must not alias it
	return it
}

// TestInTupleMatchesBasicTuple checks every accessor of a received tuple,
// for values of every kind, against api.BasicTuple holding the same
// values decoded by core/tuple: received tuples behave as before.
func TestInTupleMatchesBasicTuple(t *testing.T) {
	in, _, _, _ := constNull(t, topology.AtMostOnce, "null")
	a := newArena(in.cfg.Streams, in.cfg.Types)
	when := time.Date(2026, 11, 29, 10, 0, 0, 5, time.UTC)
	cases := [][]any{
		{int64(7), "some data"},
		{nil, false, true},
		{int(-5), int8(-8), int16(300), int32(-70000), int64(math.MinInt64)},
		{uint(5), uint8(200), uint16(60000), uint32(1 << 31), uint64(math.MaxUint64)},
		{float32(1.5), float64(-2.25), math.Inf(1)},
		{"", "é", []byte("raw"), []byte{}},
		{when, time.Duration(-3 * time.Second)},
		{"list", []any{int64(1), "x"}},            // decoded on receipt
		{map[string]any{"k": "v"}, int64(2), "s"}, // decoded on receipt
		{},
	}
	for _, vals := range cases {
		t.Run(fmt.Sprint(vals), func(t *testing.T) {
			it := decodeOne(t, in, a, vals)
			enc, _ := tuple.AppendValues(nil, vals, nil)
			want, err := tuple.DecodeValues(enc, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			bt := &api.BasicTuple{Component: "const", Stream: "default", Task: 1, FieldNames: []string{"seq", "value"}, Vals: want}
			// Typed accessors first, before Values decodes everything.
			for i := -1; i <= len(vals); i++ {
				if g, w := it.String(i), bt.String(i); g != w {
					t.Errorf("String(%d) = %q, want %q", i, g, w)
				}
				if g, w := it.Int64(i), bt.Int64(i); g != w {
					t.Errorf("Int64(%d) = %d, want %d", i, g, w)
				}
				if g, w := it.Uint64(i), bt.Uint64(i); g != w {
					t.Errorf("Uint64(%d) = %d, want %d", i, g, w)
				}
				if g, w := it.Float64(i), bt.Float64(i); g != w && !(math.IsNaN(g) && math.IsNaN(w)) {
					t.Errorf("Float64(%d) = %v, want %v", i, g, w)
				}
				if g, w := it.Bool(i), bt.Bool(i); g != w {
					t.Errorf("Bool(%d) = %v, want %v", i, g, w)
				}
				if g, w := it.Bytes(i), bt.Bytes(i); !bytes.Equal(g, w) || (g == nil) != (w == nil) {
					t.Errorf("Bytes(%d) = %#v, want %#v", i, g, w)
				}
				if g, w := it.Time(i), bt.Time(i); !g.Equal(w) || g.Location() != w.Location() {
					t.Errorf("Time(%d) = %v, want %v", i, g, w)
				}
				if g, w := it.Value(i), bt.Value(i); !reflect.DeepEqual(g, w) {
					t.Errorf("Value(%d) = %#v, want %#v", i, g, w)
				}
			}
			if it.Len() != bt.Len() || !reflect.DeepEqual(it.Values(), bt.Values()) {
				t.Errorf("Len %d Values %#v, want %d %#v", it.Len(), it.Values(), bt.Len(), bt.Values())
			}
			if it.SourceComponent() != "const" || it.SourceStream() != "default" || it.SourceTask() != 1 || it.IsTick() {
				t.Errorf("source = %s/%s task %d tick %v", it.SourceComponent(), it.SourceStream(), it.SourceTask(), it.IsTick())
			}
			if it.FieldIndex("value") != 1 || it.FieldIndex("nope") != -1 || !reflect.DeepEqual(it.Fields(), []string{"seq", "value"}) {
				t.Errorf("fields %v, FieldIndex(value) %d", it.Fields(), it.FieldIndex("value"))
			}
			// A []byte value is one slice, as in a BasicTuple.
			for i, v := range it.Values() {
				if b, ok := v.([]byte); ok && len(b) > 0 && &it.Bytes(i)[0] != &b[0] {
					t.Errorf("Bytes(%d) and Value(%d) are different slices", i, i)
				}
			}
		})
	}
}

// TestValueDecodesOneValue: Value on a tuple still encoded decodes only
// the value asked for (no []any of all values, no allocation for a small
// integer), a []byte read through Value first is still the slice Bytes
// returns, and far into a wide tuple Value decodes all values once.
func TestValueDecodesOneValue(t *testing.T) {
	in, _, _, _ := constNull(t, topology.AtMostOnce, "null")
	a := newArena(in.cfg.Streams, in.cfg.Types)
	it := decodeOne(t, in, a, []any{"word", int64(7), []byte("raw")})
	if allocs := testing.AllocsPerRun(100, func() {
		if it.Value(1) != int64(7) {
			t.Fatal("wrong value")
		}
	}); allocs != 0 {
		t.Errorf("Value(1) allocates %v times, want 0", allocs)
	}
	if it.Value(0) != "word" {
		t.Errorf("Value(0) = %#v", it.Value(0))
	}
	if it.vals.Load() != nil {
		t.Error("Value of a scalar decoded every value")
	}
	b, _ := it.Value(2).([]byte)
	if string(b) != "raw" || &b[0] != &it.Bytes(2)[0] {
		t.Errorf("Value(2) = %q is not the slice Bytes(2) returns", b)
	}
	if !reflect.DeepEqual(it.Values(), []any{"word", int64(7), []byte("raw")}) {
		t.Errorf("Values() = %#v", it.Values())
	}
	// Far into a wide tuple, Value decodes every value once.
	wide := make([]any, oneValueMax+2)
	for i := range wide {
		wide[i] = int64(1000 + i)
	}
	it = decodeOne(t, in, a, wide)
	if v := it.Value(oneValueMax + 1); v != wide[oneValueMax+1] || it.vals.Load() == nil {
		t.Errorf("Value(%d) of a wide tuple = %#v, values decoded: %v", oneValueMax+1, v, it.vals.Load() != nil)
	}
}

// TestKeptTuplesStayValid keeps tuples across many batches whose buffer is
// reused, as a windowing bolt does, and reads them afterwards.
func TestKeptTuplesStayValid(t *testing.T) {
	in, _, _, _ := constNull(t, topology.AtMostOnce, "null")
	x := in.boltExecutor(nil)
	var kept []api.Tuple
	keeper := &funcBolt{exec: func(t api.Tuple) { kept = append(kept, t) }}
	x.b = keeper
	buf := make([]byte, 0, 1<<16)
	for batch := range 20 {
		buf = buf[:0]
		for i := range 100 {
			enc, _ := tuple.AppendValues(nil, []any{int64(batch*100 + i), fmt.Sprintf("v%d", batch*100+i)}, nil)
			buf = wire.AppendRecord(buf, &wire.Header{SrcTask: 1, Stream: 1}, enc)
		}
		in.executeBatch(buf, x)
		clear(buf[:cap(buf)])
	}
	if len(kept) != 2000 {
		t.Fatalf("kept %d tuples, want 2000", len(kept))
	}
	for i, k := range kept {
		if k.Int64(0) != int64(i) || k.String(1) != fmt.Sprintf("v%d", i) || !reflect.DeepEqual(k.Values(), []any{int64(i), fmt.Sprintf("v%d", i)}) {
			t.Fatalf("kept tuple %d reads %v", i, k.Values())
		}
	}
	// Appending to Values must not reach the next tuple's values.
	v0 := append(kept[0].Values(), "extra")
	if len(v0) != 3 || kept[1].Int64(0) != 1 {
		t.Fatalf("append to Values changed another tuple")
	}
}

type funcBolt struct {
	api.BaseBolt
	exec func(api.Tuple)
}

func (b *funcBolt) Execute(t api.Tuple)                    { b.exec(t) }
func (b *funcBolt) DeclareOutputFields(api.OutputDeclarer) {}

// TestValuesConcurrently reads a kept tuple's values from several
// goroutines at once (run with -race).
func TestValuesConcurrently(t *testing.T) {
	in, _, _, _ := constNull(t, topology.AtMostOnce, "null")
	it := decodeOne(t, in, newArena(in.cfg.Streams, in.cfg.Types), []any{int64(3), "x"})
	var wg sync.WaitGroup
	got := make([][]any, 4)
	for g := range got {
		wg.Go(func() { got[g] = it.Values(); _ = it.Value(1); _ = it.String(1) })
	}
	wg.Wait()
	for _, v := range got {
		if !reflect.DeepEqual(v, []any{int64(3), "x"}) || &v[0] != &got[0][0] {
			t.Fatalf("Values = %v (must be one slice for all callers)", v)
		}
	}
}

// TestCorruptRecordIsDropped: a tuple that does not decode stops the
// batch and counts an error; earlier tuples were executed.
func TestCorruptRecordIsDropped(t *testing.T) {
	in, _, _, bolt := constNull(t, topology.AtMostOnce, "null")
	good := constBatch(t, 3, 1, false).Buf
	bad := wire.AppendRecord(nil, &wire.Header{SrcTask: 1, Stream: 1}, []byte{2, 0xff})
	in.executeBatch(append(append(good, bad...), good...), in.boltExecutor(bolt))
	if bolt.n != 3 || in.metrics.Errors.Load() != 1 || in.metrics.Executed.Load() != 3 {
		t.Errorf("executed %d (metric %d), errors %d; want 3, 3, 1", bolt.n, in.metrics.Executed.Load(), in.metrics.Errors.Load())
	}
}

// TestExecutePanicSkipsOneTuple: a panicking Execute is reported and the
// batch goes on.
func TestExecutePanicSkipsOneTuple(t *testing.T) {
	in, _, _, _ := constNull(t, topology.AtMostOnce, "null")
	var seen []int64
	b := &funcBolt{exec: func(t api.Tuple) {
		if t.Int64(0)%4 == 1 {
			panic("boom")
		}
		seen = append(seen, t.Int64(0))
	}}
	in.executeBatch(constBatch(t, 8, 1, false).Buf, in.boltExecutor(b))
	if len(seen) != 6 || in.metrics.Errors.Load() != 2 || in.metrics.Executed.Load() != 8 {
		t.Errorf("seen %v, errors %d, executed %d; want 6 tuples, 2 errors, 8 executed", seen, in.metrics.Errors.Load(), in.metrics.Executed.Load())
	}
}

// TestHotPathAllocations: emitting a tuple allocates nothing, and
// receiving one allocates only its share of the arena's chunks.
func TestHotPathAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	for _, mode := range []topology.DeliveryMode{topology.AtMostOnce, topology.AtLeastOnce} {
		t.Run(string(mode), func(t *testing.T) {
			in, _, _, bolt := constNull(t, mode, "null")
			const n = 1024
			batch := constBatch(t, n, 1, mode == topology.AtLeastOnce)
			x := in.boltExecutor(bolt)
			in.executeBatch(batch.Buf, x)
			perTuple := testing.AllocsPerRun(20, func() { in.executeBatch(batch.Buf, x) }) / n
			if perTuple > 0.1 {
				t.Errorf("receiving allocates %.3f times per tuple, want at most 0.1 (arena chunks only)", perTuple)
			}

			sp, mt, _, _ := constNull(t, topology.AtMostOnce, "const")
			vals := api.Values{int64(1 << 40), "some data"}
			c := &spoutCollector{em: &sp.em}
			for range 2 * n { // warm the batch pool
				c.Emit(vals, nil)
			}
			sp.em.flushAll()
			if allocs := testing.AllocsPerRun(10*n, func() { c.Emit(vals, nil) }); allocs != 0 {
				t.Errorf("emitting allocates %.2f times per tuple, want 0", allocs)
			}
			if mt.sent == 0 {
				t.Error("nothing sent")
			}
		})
	}
}

// TestAckIdentity: a received tuple keeps its edge and roots (one inline,
// or several), and acking it sends one update per root, once.
func TestAckIdentity(t *testing.T) {
	in, mt, _, _ := constNull(t, topology.AtLeastOnce, "null")
	a := newArena(in.cfg.Streams, in.cfg.Types)
	for _, roots := range [][]wire.Root{{{Task: 1, ID: 9}}, {{Task: 1, ID: 9}, {Task: 3, ID: 4}, {Task: 1, ID: 5}}} {
		enc, _ := tuple.AppendValues(nil, []any{int64(1), "x"}, nil)
		buf := wire.AppendRecord(nil, &wire.Header{SrcTask: 1, Stream: 1, Edge: 0xabc, Roots: roots}, enc)
		var rd wire.RecordReader
		var h wire.Header
		rd.Reset(buf)
		it, err := in.decode(&rd, &h, a)
		if err != nil {
			t.Fatal(err)
		}
		clear(buf)
		if it.ack == nil || it.ack.edge != 0xabc || !reflect.DeepEqual(it.ack.roots(), roots) || len(it.ack.xors()) != len(roots) {
			t.Fatalf("ack state %+v, want edge 0xabc and roots %v", it.ack, roots)
		}
		c := &boltCollector{em: &in.em}
		before := mt.acks
		c.Ack(it)
		c.Ack(it)
		in.em.flushAll()
		if got := mt.acks - before; got != len(roots) {
			t.Errorf("acking sent %d updates, want %d", got, len(roots))
		}
	}
}
