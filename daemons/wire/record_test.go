package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/egret-stream/egret/core/topology"
)

var recordCases = []struct {
	name   string
	h      Header
	values []byte
}{
	{"untracked", Header{SrcTask: 1, Stream: 1}, []byte{1, 2, 3}},
	{"empty values", Header{SrcTask: 0, Stream: 0}, nil},
	{"edge and one root", Header{SrcTask: 300, Stream: 7, Edge: 0xdeadbeefcafef00d, Roots: []Root{{Task: 2, ID: 42}}}, []byte("payload")},
	{"many roots", Header{SrcTask: 5, Stream: 2, Edge: 1, Roots: []Root{
		{Task: 1, ID: 1}, {Task: 1 << 20, ID: math.MaxUint64}, {Task: math.MaxInt32, ID: 0}, {Task: 0, ID: 1 << 63},
	}}, bytes.Repeat([]byte{0xab}, 300)},
	{"large ids", Header{SrcTask: 1 << 31, Stream: 1 << 31, Edge: math.MaxUint64}, []byte{0}},
}

func TestRecordRoundTrip(t *testing.T) {
	// Every record alone, then all of them in one batch.
	var batch []byte
	for _, tc := range recordCases {
		t.Run(tc.name, func(t *testing.T) {
			buf := AppendRecord(nil, &tc.h, tc.values)
			var rd RecordReader
			rd.Reset(buf)
			var h Header
			vals, err := rd.Next(&h)
			if err != nil {
				t.Fatal(err)
			}
			assertHeader(t, &h, &tc.h)
			if !bytes.Equal(vals, tc.values) {
				t.Errorf("values = %x, want %x", vals, tc.values)
			}
			if rd.More() {
				t.Error("More() after the only record")
			}
		})
		batch = AppendRecord(batch, &tc.h, tc.values)
	}
	var rd RecordReader
	rd.Reset(batch)
	var h Header
	for i, tc := range recordCases {
		if !rd.More() {
			t.Fatalf("More() = false before record %d", i)
		}
		vals, err := rd.Next(&h)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		assertHeader(t, &h, &tc.h)
		if !bytes.Equal(vals, tc.values) {
			t.Errorf("record %d: values = %x, want %x", i, vals, tc.values)
		}
	}
	if rd.More() {
		t.Error("More() after the last record")
	}
}

func assertHeader(t *testing.T, got, want *Header) {
	t.Helper()
	w := *want
	if len(w.Roots) == 0 {
		w.Roots = nil
	}
	g := *got
	if len(g.Roots) == 0 {
		g.Roots = nil
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("header = %+v, want %+v", g, w)
	}
}

func TestRecordAppendsToExisting(t *testing.T) {
	prefix := []byte("prefix")
	h := Header{SrcTask: 9, Stream: 3}
	buf := AppendRecord(append([]byte(nil), prefix...), &h, []byte{7})
	if !bytes.HasPrefix(buf, prefix) {
		t.Fatal("AppendRecord overwrote dst")
	}
	var rd RecordReader
	rd.Reset(buf[len(prefix):])
	var got Header
	if _, err := rd.Next(&got); err != nil || got.SrcTask != 9 {
		t.Fatalf("Next = %+v, %v", got, err)
	}
}

// A record begun with BeginRecord, its values appended in place and ended
// with EndRecord is the record AppendRecord writes, at every length-prefix
// size and after other records.
func TestBeginEndRecord(t *testing.T) {
	cases := append([]struct {
		name   string
		h      Header
		values []byte
	}{}, recordCases...)
	for _, n := range []int{100, 127, 128, 16000, 16384, 3 << 20} {
		cases = append(cases, struct {
			name   string
			h      Header
			values []byte
		}{fmt.Sprintf("%d value bytes", n), Header{SrcTask: 3, Stream: 1}, bytes.Repeat([]byte{0x5a}, n)})
	}
	prefix := AppendRecord(nil, &recordCases[2].h, recordCases[2].values)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := AppendRecord(append([]byte(nil), prefix...), &tc.h, tc.values)
			got, start := BeginRecord(append([]byte(nil), prefix...), &tc.h)
			if start != len(prefix) {
				t.Fatalf("start = %d, want %d", start, len(prefix))
			}
			got = EndRecord(append(got, tc.values...), start)
			if !bytes.Equal(got, want) {
				t.Fatalf("BeginRecord/EndRecord wrote %d bytes, AppendRecord %d: they differ", len(got), len(want))
			}
		})
	}
}

func TestAppendRecordDoesNotAllocate(t *testing.T) {
	h := Header{SrcTask: 17, Stream: 4, Edge: 99, Roots: []Root{{Task: 1, ID: 2}, {Task: 3, ID: 4}}}
	values := bytes.Repeat([]byte{1}, 100)
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(1000, func() {
		buf = AppendRecord(buf[:0], &h, values)
	})
	if allocs != 0 {
		t.Errorf("AppendRecord allocates %.1f times per call with room in dst", allocs)
	}
}

func TestRecordReaderDoesNotAllocate(t *testing.T) {
	var batch []byte
	for _, tc := range recordCases {
		batch = AppendRecord(batch, &tc.h, tc.values)
	}
	var rd RecordReader
	var h Header
	readAll := func() {
		rd.Reset(batch)
		for rd.More() {
			if _, err := rd.Next(&h); err != nil {
				panic(err)
			}
		}
	}
	readAll() // grows the reader's roots buffer once
	if allocs := testing.AllocsPerRun(1000, readAll); allocs != 0 {
		t.Errorf("RecordReader allocates %.1f times per batch", allocs)
	}
}

func TestRecordReaderAliasesReaderMemory(t *testing.T) {
	// Roots of a record are valid until the next call: the reader reuses
	// its buffer. Callers that keep them must copy; this documents it.
	buf := AppendRecord(nil, &Header{Roots: []Root{{Task: 1, ID: 1}}}, nil)
	buf = AppendRecord(buf, &Header{Roots: []Root{{Task: 2, ID: 2}}}, nil)
	var rd RecordReader
	rd.Reset(buf)
	var h1, h2 Header
	if _, err := rd.Next(&h1); err != nil {
		t.Fatal(err)
	}
	first := h1.Roots[0]
	if _, err := rd.Next(&h2); err != nil {
		t.Fatal(err)
	}
	if first != (Root{Task: 1, ID: 1}) || h2.Roots[0] != (Root{Task: 2, ID: 2}) {
		t.Fatalf("roots = %v then %v", first, h2.Roots)
	}
}

// rawRecord builds a record body by hand so that tests can write fields the
// encoder never would.
func rawRecord(body []byte) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(body))), body...)
}

func TestRecordReaderCorrupt(t *testing.T) {
	good := AppendRecord(nil, &Header{SrcTask: 300, Stream: 200, Edge: 5, Roots: []Root{{Task: 1000, ID: 6}, {Task: 2, ID: 7}}}, []byte("vals"))

	body := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	uv := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

	tests := map[string][]byte{
		"empty length":        {},
		"unterminated len":    {0x80},
		"overlong varint":     bytes.Repeat([]byte{0xff}, 11),
		"huge length":         binary.AppendUvarint(nil, math.MaxUint64),
		"length past end":     append(binary.AppendUvarint(nil, 100), 1, 2, 3),
		"empty record":        rawRecord(nil),
		"no stream":           rawRecord(uv(1)),
		"edge truncated":      rawRecord(body(uv(1), uv(1), []byte{1, 2, 3})),
		"no root count":       rawRecord(body(uv(1), uv(1), u64(0))),
		"too many roots":      rawRecord(body(uv(1), uv(1), u64(0), uv(MaxRoots+1), bytes.Repeat([]byte{0}, 9*(MaxRoots+1)))),
		"huge root count":     rawRecord(body(uv(1), uv(1), u64(0), uv(math.MaxUint64))),
		"roots past end":      rawRecord(body(uv(1), uv(1), u64(0), uv(3), uv(1), u64(1))),
		"root id truncated":   rawRecord(body(uv(1), uv(1), u64(0), uv(1), uv(1), []byte{1, 2, 3, 4, 5, 6, 7, 8})[:14]),
		"root task too big":   rawRecord(body(uv(1), uv(1), u64(0), uv(1), uv(1<<32), u64(1))),
		"source task too big": rawRecord(body(uv(1<<32), uv(1), u64(0), uv(0))),
		"stream too big":      rawRecord(body(uv(1), uv(1<<40), u64(0), uv(0))),
	}
	// Every truncation of a good record is corrupt.
	for i := 0; i < len(good); i++ {
		tests[fmt.Sprintf("truncated to %d bytes", i)] = good[:i]
	}
	// A length prefix that claims more than the record holds.
	grown := append([]byte(nil), good...)
	grown[0]++
	tests["length one too long"] = grown

	for name, buf := range tests {
		t.Run(name, func(t *testing.T) {
			var rd RecordReader
			rd.Reset(buf)
			if len(buf) == 0 && rd.More() {
				t.Fatal("More() = true on an empty batch")
			}
			var h Header
			_, err := rd.Next(&h)
			for err == nil && rd.More() {
				_, err = rd.Next(&h)
			}
			if err == nil {
				t.Fatalf("no error reading %x", buf)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("error %v does not wrap ErrCorrupt", err)
			}
		})
	}
}

func FuzzRecordReader(f *testing.F) {
	var batch []byte
	for _, tc := range recordCases {
		batch = AppendRecord(batch, &tc.h, tc.values)
		f.Add(AppendRecord(nil, &tc.h, tc.values))
	}
	f.Add(batch)
	f.Add([]byte{})
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		var rd RecordReader
		rd.Reset(data)
		var h Header
		var re []byte
		for rd.More() {
			vals, err := rd.Next(&h)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error %v does not wrap ErrCorrupt", err)
				}
				return
			}
			// A record that decodes must encode to a record that decodes
			// to the same thing.
			re = AppendRecord(re[:0], &h, vals)
			var rd2 RecordReader
			rd2.Reset(re)
			var h2 Header
			vals2, err := rd2.Next(&h2)
			if err != nil || !bytes.Equal(vals, vals2) || h2.SrcTask != h.SrcTask || h2.Stream != h.Stream ||
				h2.Edge != h.Edge || len(h2.Roots) != len(h.Roots) || rd2.More() {
				t.Fatalf("re-encoded record differs: %+v %x vs %+v %x (%v)", h, vals, h2, vals2, err)
			}
		}
	})
}

func TestStreamTable(t *testing.T) {
	topo := &topology.Topology{Name: "t", Components: []topology.Component{
		{Name: "src", Kind: topology.Spout, Parallelism: 1, Outputs: []topology.Stream{
			{ID: "default", Fields: []string{"a"}}, {ID: "direct", Fields: []string{"b"}, Direct: true},
		}},
		{Name: "mid", Kind: topology.Bolt, Parallelism: 1, Outputs: []topology.Stream{{ID: "default", Fields: []string{"c", "d"}}}},
		{Name: "sink", Kind: topology.Bolt, Parallelism: 1},
	}}
	want := []StreamInfo{
		{Component: "__system", ID: "__tick"},
		{Component: "src", ID: "default", Fields: []string{"a"}},
		{Component: "src", ID: "direct", Fields: []string{"b"}, Direct: true},
		{Component: "mid", ID: "default", Fields: []string{"c", "d"}},
	}
	for attempt := 0; attempt < 5; attempt++ {
		st := NewStreamTable(topo.Clone())
		for i, w := range want {
			idx, ok := st.Index(w.Component, w.ID)
			if !ok || idx != uint32(i) {
				t.Fatalf("Index(%s, %s) = %d, %v; want %d", w.Component, w.ID, idx, ok, i)
			}
			s, err := st.Stream(uint32(i))
			if err != nil || !reflect.DeepEqual(*s, w) {
				t.Fatalf("Stream(%d) = %+v, %v; want %+v", i, s, err, w)
			}
		}
		if idx, ok := st.Index("__system", "__tick"); !ok || idx != TickStreamIndex {
			t.Fatalf("tick stream index = %d, %v", idx, ok)
		}
		if _, ok := st.Index("sink", "default"); ok {
			t.Fatal("Index found a stream sink does not declare")
		}
		if _, ok := st.Index("src", "nope"); ok {
			t.Fatal("Index found an undeclared stream")
		}
		for _, bad := range []uint32{uint32(len(want)), 1 << 31, math.MaxUint32} {
			if _, err := st.Stream(bad); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Stream(%d) error = %v, want ErrCorrupt", bad, err)
			}
		}
	}
}

func TestBatchReset(t *testing.T) {
	b := &Batch{Dest: 1, Count: 3, Buf: make([]byte, 10, 64)}
	b.Reset(7)
	if b.Dest != 7 || b.Count != 0 || len(b.Buf) != 0 || cap(b.Buf) != 64 {
		t.Errorf("after Reset: %+v (cap %d)", b, cap(b.Buf))
	}
}
