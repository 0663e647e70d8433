package blob

import (
	"bytes"
	"errors"
	"testing"

	"github.com/egret-stream/egret/core/spi"
)

func TestRoundTrip(t *testing.T) {
	for _, state := range [][]byte{nil, {}, []byte("x"), bytes.Repeat([]byte("state"), 1000)} {
		b := Encode(state)
		if len(b) != HeaderSize+len(state) {
			t.Fatalf("Encode(%d bytes) is %d bytes", len(state), len(b))
		}
		got, err := Decode(b)
		if err != nil || !bytes.Equal(got, state) {
			t.Fatalf("Decode(Encode(%q)) = %q, %v", state, got, err)
		}
	}
}

func TestDamage(t *testing.T) {
	good := Encode([]byte("some state of a task"))
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	for name, b := range map[string][]byte{
		"empty":          nil,
		"short header":   good[:HeaderSize-1],
		"truncated":      good[:len(good)-1],
		"extended":       append(bytes.Clone(good), 0),
		"magic":          flip(0),
		"length":         flip(11),
		"crc":            flip(15),
		"state bit":      flip(HeaderSize + 3),
		"garbage":        bytes.Repeat([]byte{0xff}, 64),
		"header only":    good[:HeaderSize],
		"another format": append([]byte("EGC2"), good[4:]...),
	} {
		if _, err := Decode(b); !errors.Is(err, spi.ErrCorrupt) {
			t.Errorf("%s: Decode = %v, want ErrCorrupt", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode([]byte("seed")))
	f.Add([]byte("EGC1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		state, err := Decode(b)
		if err != nil {
			if !errors.Is(err, spi.ErrCorrupt) {
				t.Fatalf("Decode error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if !bytes.Equal(Encode(state), b) {
			t.Fatalf("Decode accepted %x, which is not Encode of its state", b)
		}
	})
}

func TestLayout(t *testing.T) {
	for _, ok := range []string{"0", "7", "1234567890123"} {
		if id, good := ParseCheckpointDir(ok); !good || CheckpointDir(id) != ok {
			t.Errorf("ParseCheckpointDir(%q) = %d, %v", ok, id, good)
		}
	}
	for _, bad := range []string{"", "-1", "007", "+3", "1e3", ".tmp-3", "3.state", "99999999999999999999"} {
		if id, good := ParseCheckpointDir(bad); good {
			t.Errorf("ParseCheckpointDir(%q) = %d, want false", bad, id)
		}
	}
	if TaskFile(12) != "12.state" || !IsTaskFile("12.state") {
		t.Errorf("TaskFile(12) = %q", TaskFile(12))
	}
	for _, bad := range []string{"12", ".tmp-12.state", "012.state", "-1.state", "x.state", "4294967296.state"} {
		if IsTaskFile(bad) {
			t.Errorf("IsTaskFile(%q) = true", bad)
		}
	}
	for _, key := range []spi.CheckpointKey{
		{Topology: "../x", Checkpoint: 1}, {Topology: "", Checkpoint: 1}, {Topology: "a/b"},
		{Topology: "wc", Checkpoint: -1}, {Topology: "wc", Task: -2},
	} {
		if err := CheckKey(key); err == nil {
			t.Errorf("CheckKey(%+v) = nil", key)
		}
	}
	if err := CheckKey(spi.CheckpointKey{Topology: "word-count_2", Checkpoint: 3, Task: 4}); err != nil {
		t.Error(err)
	}
}
