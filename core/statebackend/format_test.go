package statebackend

import (
	"bytes"
	"errors"
	"testing"
)

func stream(t testing.TB, entries ...[2]string) []byte {
	var buf bytes.Buffer
	w := NewSnapshotWriter(&buf)
	for _, e := range entries {
		if err := w.Add([]byte(e[0]), AppendValue(nil, []byte(e[1]), 0)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := w.Finish(); err != nil || n != int64(buf.Len()) {
		t.Fatalf("finish: %d, %v (wrote %d)", n, err, buf.Len())
	}
	return buf.Bytes()
}

func TestSnapshotRoundTrip(t *testing.T) {
	k1 := string(AppendStatePrefix(nil, 1, "s")) + "a"
	k2 := string(AppendStatePrefix(nil, 2, "s")) + "a"
	var got []string
	err := ReadSnapshot(bytes.NewReader(stream(t, [2]string{k1, "x"}, [2]string{k2, "y"})), func(k, v []byte) error {
		_, val, _ := SplitValue(v)
		got = append(got, string(k)+"="+string(val))
		return nil
	})
	if err != nil || len(got) != 2 || got[0] != k1+"=x" || got[1] != k2+"=y" {
		t.Fatalf("read %q, %v", got, err)
	}
	// Keys out of order are damage.
	err = ReadSnapshot(bytes.NewReader(stream(t, [2]string{k2, "y"}, [2]string{k1, "x"})), func(k, v []byte) error { return nil })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("out of order: %v", err)
	}
}

func TestKeys(t *testing.T) {
	g, st, key, ok := SplitKey(append(AppendStatePrefix(nil, 300, "count"), "k\x00y"...))
	if !ok || g != 300 || string(st) != "count" || string(key) != "k\x00y" {
		t.Fatalf("split = %d %q %q %v", g, st, key, ok)
	}
	for _, bad := range []string{"", "\x00\x01", "\x00\x01\x00k", "\x00\x01abc"} {
		if _, _, _, ok := SplitKey([]byte(bad)); ok {
			t.Errorf("SplitKey(%q) accepted", bad)
		}
	}
	if e := PrefixEnd([]byte{1, 0xff}); !bytes.Equal(e, []byte{2}) {
		t.Errorf("PrefixEnd = %x", e)
	}
	if e := PrefixEnd([]byte{0xff, 0xff}); e != nil {
		t.Errorf("PrefixEnd(ffff) = %x", e)
	}
}

// FuzzReadSnapshot: no input makes the reader panic or accept damage it
// can see, and what it accepts re-encodes to the same bytes.
func FuzzReadSnapshot(f *testing.F) {
	k1 := string(AppendStatePrefix(nil, 1, "s")) + "a"
	f.Add(stream(f, [2]string{k1, "x"}))
	f.Add(stream(f))
	f.Add([]byte("EGKS\x01\x05"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var buf bytes.Buffer
		w := NewSnapshotWriter(&buf)
		err := ReadSnapshot(bytes.NewReader(b), func(k, v []byte) error { return w.Add(k, v) })
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if _, err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), b) {
			t.Fatalf("accepted stream re-encodes differently")
		}
	})
}
