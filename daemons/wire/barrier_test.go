package wire

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

func TestBarrierRoundTrip(t *testing.T) {
	b := Barrier{Dest: 7, Src: 3, Checkpoint: 42, Epoch: 5, Flags: BarrierAborted}
	f := AppendBarrier(nil, b)
	ft, payload, _, err := ReadFrame(bufio.NewReader(bytes.NewReader(f)), nil, 1<<10)
	if err != nil || ft != FrameBarrier {
		t.Fatalf("ReadFrame = %v, %v", ft, err)
	}
	got, err := ParseBarrier(payload)
	if err != nil || got != b {
		t.Fatalf("ParseBarrier = %+v, %v; want %+v", got, err, b)
	}
	// A barrier is routed by the same bytes as a data frame.
	if dest, err := barrierDestForTest(f[4:]); err != nil || dest != 7 {
		t.Fatalf("dest = %d, %v", dest, err)
	}
	for _, bad := range []Barrier{{Dest: 1, Checkpoint: 0}, {Dest: 1, Checkpoint: 1, Epoch: -1}, {Dest: 1, Checkpoint: 1, Flags: 4}} {
		if _, err := ParseBarrier(AppendBarrier(nil, bad)[5:]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseBarrier(%+v) = %v, want ErrCorrupt", bad, err)
		}
	}
	if _, err := ParseBarrier([]byte{1, 2}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("short barrier: %v", err)
	}
}

func barrierDestForTest(body []byte) (uint32, error) {
	if len(body) < 5 {
		return 0, ErrCorrupt
	}
	return uint32(body[1])<<24 | uint32(body[2])<<16 | uint32(body[3])<<8 | uint32(body[4]), nil
}

func TestEpochAndFirstSource(t *testing.T) {
	f := AppendEpoch(nil, 9)
	if e, err := ParseEpoch(f[5:]); err != nil || e != 9 {
		t.Fatalf("ParseEpoch = %d, %v", e, err)
	}
	if _, err := ParseEpoch([]byte{1}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short epoch: %v", err)
	}
	rec := AppendRecord(nil, &Header{SrcTask: 300, Stream: 1}, []byte{0})
	frame := AppendDataFrame(nil, &Batch{Dest: 2, Count: 1, Buf: rec})
	if src, ok := FirstSource(frame[5:]); !ok || src != 300 {
		t.Fatalf("FirstSource = %d, %v", src, ok)
	}
	if _, ok := FirstSource(frame[5:13]); ok {
		t.Fatal("FirstSource of a frame without records succeeded")
	}
}

// FuzzParseBarrier: arbitrary payloads never panic, and what parses
// encodes back to the same bytes.
func FuzzParseBarrier(f *testing.F) {
	f.Add(AppendBarrier(nil, Barrier{Dest: 1, Src: 2, Checkpoint: 3, Epoch: 4})[5:])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		b, err := ParseBarrier(p)
		if err != nil {
			return
		}
		if got := AppendBarrier(nil, b)[5:]; !bytes.Equal(got, p) {
			t.Fatalf("re-encoded %x, parsed from %x", got, p)
		}
		_, _ = ParseEpoch(p)
		_, _ = FirstSource(p)
	})
}
