package wire

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

func TestAckUpdatesRoundTrip(t *testing.T) {
	for _, in := range [][]AckUpdate{
		nil,
		{{Root: Root{Task: 1, ID: 2}, Xor: 3}},
		{{Root: Root{Task: 1 << 31, ID: ^uint64(0)}, Xor: 1}, {Root: Root{Task: 0, ID: 0}, Xor: ^uint64(0)}},
	} {
		buf := AppendAckUpdates(nil, in)
		out, err := DecodeAckUpdates(buf, nil)
		if err != nil {
			t.Fatalf("decode %v: %v", in, err)
		}
		if len(in) == 0 && len(out) == 0 {
			continue
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("round trip: got %v, want %v", out, in)
		}
	}
}

func TestAckResultsRoundTrip(t *testing.T) {
	in := []AckResult{{Root: Root{Task: 3, ID: 9}, Acked: true}, {Root: Root{Task: 4, ID: 1 << 63}}}
	out, err := DecodeAckResults(AppendAckResults(nil, in), nil)
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: got %v, %v; want %v", out, err, in)
	}
}

func TestAckDecodeRejectsCorrupt(t *testing.T) {
	good := AppendAckUpdates(nil, []AckUpdate{{Root: Root{Task: 1, ID: 2}, Xor: 3}})
	goodRes := AppendAckResults(nil, []AckResult{{Root: Root{Task: 1, ID: 2}, Acked: true}})
	badStatus := append([]byte(nil), goodRes...)
	badStatus[len(badStatus)-1] = 7
	cases := map[string]struct {
		payload []byte
		results bool
	}{
		"empty":             {payload: nil},
		"truncated":         {payload: good[:len(good)-1]},
		"trailing":          {payload: append(append([]byte(nil), good...), 0)},
		"huge count":        {payload: binary.AppendUvarint(nil, 1<<40)},
		"results truncated": {payload: goodRes[:len(goodRes)-1], results: true},
		"bad status":        {payload: badStatus, results: true},
	}
	for name, c := range cases {
		var err error
		if c.results {
			_, err = DecodeAckResults(c.payload, nil)
		} else {
			_, err = DecodeAckUpdates(c.payload, nil)
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
}

func TestAppendAckFrame(t *testing.T) {
	u := []AckUpdate{{Root: Root{Task: 7, ID: 8}, Xor: 9}}
	f := AppendAckFrame([]byte{0xaa}, FrameAck, u)
	if f[0] != 0xaa || binary.BigEndian.Uint32(f[1:]) != uint32(len(f)-5) || FrameType(f[5]) != FrameAck {
		t.Fatalf("bad frame header % x", f)
	}
	got, err := DecodeAckUpdates(f[6:], nil)
	if err != nil || !reflect.DeepEqual(got, u) {
		t.Fatalf("payload: %v %v", got, err)
	}
	r := AppendAckResultFrame(nil, []AckResult{{Root: Root{Task: 1, ID: 1}, Acked: true}})
	if FrameType(r[4]) != FrameAckResult || !IsAckFrame(FrameAckResult) || IsAckFrame(FrameData) || IsAckFrame(5) {
		t.Fatalf("bad result frame % x", r)
	}
}

func FuzzDecodeAckUpdates(f *testing.F) {
	f.Add(AppendAckUpdates(nil, []AckUpdate{{Root: Root{Task: 1, ID: 2}, Xor: 3}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := DecodeAckUpdates(data, nil)
		if err != nil {
			return
		}
		again, err := DecodeAckUpdates(AppendAckUpdates(nil, u), nil)
		if err != nil || len(again) != len(u) {
			t.Fatalf("re-encoding %d updates: %d, %v", len(u), len(again), err)
		}
		for i := range u {
			if u[i] != again[i] {
				t.Fatalf("update %d changed: %v != %v", i, u[i], again[i])
			}
		}
	})
}

func FuzzDecodeAckResults(f *testing.F) {
	f.Add(AppendAckResults(nil, []AckResult{{Root: Root{Task: 1, ID: 2}, Acked: true}}))
	f.Add([]byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeAckResults(data, nil)
		if err != nil {
			return
		}
		again, err := DecodeAckResults(AppendAckResults(nil, r), nil)
		if err != nil || !reflect.DeepEqual(again, r) && len(r) > 0 {
			t.Fatalf("re-encoding %d results: %v, %v", len(r), again, err)
		}
	})
}
