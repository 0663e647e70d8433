package source

import (
	"encoding/json"
	"testing"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/tuple"
	"github.com/egret-stream/egret/examples/nexmark/generator"
)

// TestTupleEncodingBeatsJSON encodes 10,000 events both ways: the tuple
// fields must round-trip and take fewer bytes than JSON.
func TestTupleEncodingBeatsJSON(t *testing.T) {
	g, err := generator.New(generator.Default())
	if err != nil {
		t.Fatal(err)
	}
	var tupleBytes, jsonBytes int
	var buf []byte
	var vals api.Values
	for id := int64(0); id < 10_000; id++ {
		e := g.Event(id)
		vals = AppendValues(vals[:0], &e)
		if buf, err = tuple.AppendValues(buf[:0], vals, nil); err != nil {
			t.Fatal(err)
		}
		tupleBytes += len(buf)
		dec, err := tuple.DecodeValues(buf, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		bt := api.NewTuple("events", StreamOf(e.Kind), 1, nil, dec...)
		switch e.Kind {
		case generator.KindPerson:
			if got := Person(bt); got != *e.Person {
				t.Fatalf("person %d: %+v, want %+v", id, got, *e.Person)
			}
		case generator.KindAuction:
			if got := Auction(bt); got != *e.Auction {
				t.Fatalf("auction %d: %+v, want %+v", id, got, *e.Auction)
			}
		default:
			if got := Bid(bt); got != *e.Bid {
				t.Fatalf("bid %d: %+v, want %+v", id, got, *e.Bid)
			}
		}
		j, _ := json.Marshal(e)
		jsonBytes += len(j)
	}
	t.Logf("10,000 events: %d bytes as tuple fields, %d as JSON", tupleBytes, jsonBytes)
	if tupleBytes >= jsonBytes {
		t.Errorf("tuple fields take %d bytes, JSON %d", tupleBytes, jsonBytes)
	}
}

func benchEvents(b *testing.B) []generator.Event {
	g, _ := generator.New(generator.Default())
	evs := make([]generator.Event, 1000)
	for i := range evs {
		evs[i] = g.Event(int64(i))
	}
	return evs
}

// BenchmarkEncodeTuple and BenchmarkEncodeJSON compare encoding an event
// as tuple fields with encoding it as JSON.
func BenchmarkEncodeTuple(b *testing.B) {
	evs := benchEvents(b)
	var buf []byte
	var vals api.Values
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		vals = AppendValues(vals[:0], &evs[i%len(evs)])
		buf, _ = tuple.AppendValues(buf[:0], vals, nil)
	}
}

func BenchmarkEncodeJSON(b *testing.B) {
	evs := benchEvents(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, _ = json.Marshal(&evs[i%len(evs)])
	}
}

func BenchmarkDecodeTuple(b *testing.B) {
	evs := benchEvents(b)
	var encoded [][]byte
	for i := range evs {
		vals := AppendValues(nil, &evs[i])
		buf, _ := tuple.AppendValues(nil, vals, nil)
		encoded = append(encoded, buf)
	}
	var dst []any
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		dst, _ = tuple.DecodeValues(encoded[i%len(encoded)], dst[:0], nil)
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	evs := benchEvents(b)
	var encoded [][]byte
	for i := range evs {
		j, _ := json.Marshal(&evs[i])
		encoded = append(encoded, j)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var e generator.Event
		_ = json.Unmarshal(encoded[i%len(encoded)], &e)
	}
}
