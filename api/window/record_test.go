package window

import (
	"reflect"
	"testing"
)

func sampleRecord() keyRecord[string, Reduced[int64]] {
	return keyRecord[string, Reduced[int64]]{Key: "user-17", N: 3, Timer: 1_700_000_001_999, Wins: []winRecord[Reduced[int64]]{
		{Start: 1_700_000_000_000, End: 1_700_000_002_000, Acc: Reduced[int64]{Value: 42, Set: true}, Count: 7, SinceEmit: 2, LastEmit: 1_700_000_000_500, First: 1_700_000_000_010, Last: 1_700_000_001_900},
		{Start: -5, End: 10, Fired: true, Count: 1, LastEmit: noTimer},
		{Start: GlobalWindow.Start, End: GlobalWindow.End, Count: 2, First: 5, Last: 1_700_000_000_000},
	}}
}

func TestRecordSerializerRoundTrips(t *testing.T) {
	s := newRecordSerializer[string, Reduced[int64]]()
	r := sampleRecord()
	b, err := s.Append([]byte("prefix"), r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Decode(b[len("prefix"):])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("decoded %+v, encoded %+v", got, r)
	}
	for i := range len(b) - len("prefix") {
		if _, err := s.Decode(b[len("prefix") : len("prefix")+i]); err == nil {
			t.Fatalf("a record cut to %d bytes decoded", i)
		}
	}
}

// FuzzRecordDecode: a damaged record is an error, never a panic, and
// what decodes encodes back to the same bytes.
func FuzzRecordDecode(f *testing.F) {
	s := newRecordSerializer[string, int64]()
	b, _ := s.Append(nil, keyRecord[string, int64]{Key: "k", Timer: noTimer, Wins: []winRecord[int64]{{Start: 1, End: 3, Acc: 9}}})
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := s.Decode(b)
		if err != nil {
			return
		}
		again, err := s.Append(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		if r2, err := s.Decode(again); err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("%+v re-encoded does not decode back: %v", r, err)
		}
	})
}
