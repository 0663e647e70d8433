package ckptio

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/egret-stream/egret/core/keygroup"
)

func sample() *Manifest {
	return &Manifest{
		Checkpoint: 12, Task: 3, MaxParallelism: 128, Groups: keygroup.Range{Start: 32, End: 64}, Backend: "pebble",
		Files: []File{
			{Name: FileName(12, 3, "operator"), Part: PartOperator, Size: 10, Sum: 0xfeed},
			{Name: FileName(9, 3, "a1b2-000007.sst"), Part: PartFilesPrefix + "000007.sst", Size: 1 << 30, Sum: 1, Groups: keygroup.Range{Start: 32, End: 64}},
			{Name: FileName(12, 3, "MANIFEST-000001"), Part: PartFilesPrefix + "MANIFEST-000001", Size: 300, Sum: 2, Groups: keygroup.Range{Start: 32, End: 64}},
		},
	}
}

func TestManifestRoundTrip(t *testing.T) {
	for _, m := range []*Manifest{sample(), {Checkpoint: 1, Files: []File{}}} {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, err := UnmarshalManifest(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip: %+v, want %+v", got, m)
		}
	}
	m := sample()
	if m.Size() != 10+1<<30+300 || m.Uploaded() != 310 {
		t.Fatalf("Size %d Uploaded %d", m.Size(), m.Uploaded())
	}
}

func TestManifestRefused(t *testing.T) {
	good, _ := sample().MarshalBinary()
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x10
		if _, err := UnmarshalManifest(b); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bit flip at %d: %v, want ErrCorrupt", i, err)
		}
	}
	for n := range len(good) {
		if _, err := UnmarshalManifest(good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	for name, mutate := range map[string]func(*Manifest){
		"file from the future": func(m *Manifest) { m.Files[1].Name = FileName(13, 3, "x") },
		"bad file name":        func(m *Manifest) { m.Files[1].Name = "9-3-../x" },
		"no origin":            func(m *Manifest) { m.Files[1].Name = "x-3-y" },
		"twice the same part":  func(m *Manifest) { m.Files[2].Part = m.Files[1].Part },
		"unknown part":         func(m *Manifest) { m.Files[1].Part = "other" },
		"groups beyond max":    func(m *Manifest) { m.Files[1].Groups.End = 129 },
		"task groups reversed": func(m *Manifest) { m.Groups = keygroup.Range{Start: 5, End: 4} },
		"negative size":        func(m *Manifest) { m.Files[0].Size = -1 },
	} {
		m := sample()
		mutate(m)
		if _, err := m.MarshalBinary(); err == nil {
			t.Errorf("%s: MarshalBinary accepted it", name)
		}
	}
	if o, ok := Origin("0012-3-x"); ok {
		t.Errorf("Origin of a non-canonical id = %d", o)
	}
}

func FuzzManifest(f *testing.F) {
	good, _ := sample().MarshalBinary()
	f.Add(good)
	f.Add([]byte("EGM1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := UnmarshalManifest(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("a decoded manifest does not encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decode then encode changed the bytes")
		}
	})
}
