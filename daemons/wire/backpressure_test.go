package wire

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

func TestBackPressureFrameRoundTrip(t *testing.T) {
	for _, want := range []BackPressure{
		{Container: 7, Active: true, Cause: CauseLocalInstance | CauseRemoteStMgr},
		{Container: 1, Active: false, Cause: CauseNone},
	} {
		b := AppendBackPressure(nil, want)
		typ, payload, _, err := ReadFrame(bufio.NewReader(bytes.NewReader(b)), nil, DefaultMaxFrame)
		if err != nil || typ != FrameBackPressure {
			t.Fatalf("ReadFrame = %v, %v", typ, err)
		}
		got, err := ParseBackPressure(payload)
		if err != nil || got != want {
			t.Fatalf("ParseBackPressure = %+v, %v; want %+v", got, err, want)
		}
	}
	for _, bad := range [][]byte{nil, {0, 0, 0, 1, 1}, {0, 0, 0, 1, 2, 0}, {0, 0, 0, 1, 1, 0, 0}} {
		if _, err := ParseBackPressure(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseBackPressure(%v) = %v, want ErrCorrupt", bad, err)
		}
	}
}
