package api

import (
	"bytes"
	"testing"
)

func TestStatesRoundTrip(t *testing.T) {
	s := NewStates()
	counts, err := NewState[string, int64](s, "counts")
	if err != nil {
		t.Fatal(err)
	}
	counts.Put("a", 1)
	counts.Put("b", 2)
	counts.Put("a", 3)
	counts.Delete("b")
	pos, _ := NewState[int32, int64](s, "pos")
	pos.Put(0, 99)
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	r, err := UnmarshalStates(b)
	if err != nil {
		t.Fatal(err)
	}
	// pos is not bound in the restored set, yet it is saved again.
	rc, err := NewState[string, int64](r, "counts")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := rc.Get("a"); !ok || v != 3 || rc.Len() != 1 {
		t.Fatalf("restored counts: a=%d,%v len %d", v, ok, rc.Len())
	}
	b2, err := r.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatal("re-encoding a restored set changed it (an unbound state was lost or altered)")
	}
	if _, err := NewState[string, string](r, "counts"); err == nil {
		t.Fatal("binding a state with other types succeeded")
	}
	r2, _ := UnmarshalStates(b)
	if _, err := NewState[string, string](r2, "pos"); err == nil {
		t.Fatal("decoding map[int32]int64 bytes as map[string]string succeeded")
	}
	if again, _ := NewState[string, int64](r, "counts"); again != rc {
		t.Fatal("binding a name twice gave two states")
	}
	n := 0
	rc.Range(func(string, int64) bool { n++; return false })
	if n != 1 {
		t.Fatalf("Range visited %d", n)
	}
}

func TestUnmarshalStatesRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"magic":      []byte("XXXX"),
		"old gob":    append([]byte("EGS1"), 0),
		"truncated":  append([]byte("EGS2"), 2, 1, 'a'),
		"trailing":   append([]byte("EGS2"), 0, 0, 7),
		"empty name": append([]byte("EGS2"), 1, 0, 1, 'd', 0, 1, 0, 0),
		"no desc":    append([]byte("EGS2"), 1, 1, 'a', 0, 0, 1, 0, 0),
		"bad mode":   append([]byte("EGS2"), 1, 1, 'a', 1, 'd', 9, 1, 0, 0),
		"dup":        append([]byte("EGS2"), 2, 1, 'a', 1, 'd', 0, 1, 0, 1, 'a', 1, 'd', 0, 1, 0, 0),
		"dup keyed":  append([]byte("EGS2"), 1, 1, 'a', 1, 'd', 0, 1, 0, 1, 1, 'a', 1, 'd'),
		"reserved":   append([]byte("EGS2"), 0, 1, 7, 'e', 'g', 'r', 'e', 't', '.', 'x', 1, 'd'),
		"entries":    append([]byte("EGS2"), 1, 1, 'a', 1, 'd', 0, 2, 1, 5, 0),
	} {
		if _, err := UnmarshalStates(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if s, err := UnmarshalStates(nil); err != nil || len(s.raw) != 0 {
		t.Fatalf("empty input: %v", err)
	}
}

// FuzzUnmarshalStates: stored bytes come from checkpoint storage; damage
// gives an error, never a panic, and whatever decodes re-encodes to bytes
// that decode equally.
func FuzzUnmarshalStates(f *testing.F) {
	s := NewStates()
	c, _ := NewState[string, int64](s, "counts")
	c.Put("x", 1)
	u, _ := NewState[int32, item](s, "items", WithRestoreMode(UnionRestore))
	u.Put(3, item{Name: "n", N: 4})
	s.keyed["k"] = "value int64"
	b, _ := s.MarshalBinary()
	f.Add(b)
	f.Add([]byte("EGS2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := UnmarshalStates(b)
		if err != nil {
			return
		}
		for name := range s.raw {
			_, _ = NewState[string, int64](s, name)
		}
		out, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		again, err := UnmarshalStates(out)
		if err != nil {
			t.Fatalf("re-encoded states do not decode: %v", err)
		}
		if out2, _ := again.MarshalBinary(); !bytes.Equal(out, out2) {
			t.Fatal("re-encoding is not stable")
		}
		_, _ = RedistributeStates([][]byte{b, out}, 0, 2)
	})
}
