package queries

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSideInputFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("0\tzero\n9999\tlast\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := ReadSideInput(good)
	if err != nil || m[0] != "zero" || m[9999] != "last" || len(m) != 2 {
		t.Fatalf("ReadSideInput: %v, %v", m, err)
	}
	for _, bad := range []string{"10000\tx\n", "a\tb\n", "no tab\n", "-1\tx\n"} {
		p := filepath.Join(dir, "bad")
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadSideInput(p); err == nil || !strings.Contains(err.Error(), "bad:1") {
			t.Errorf("side input %q: error %v, want one naming bad:1", bad, err)
		}
	}
	if _, err := ReadSideInput(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing side input was read")
	}
}

func FuzzReadSideInput(f *testing.F) {
	f.Add([]byte("0\tzero\n1\tone\n"))
	f.Add([]byte("x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "side")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := ReadSideInput(p)
		if err == nil {
			for k := range m {
				if k < 0 || k >= SideInputRows {
					t.Fatalf("key %d accepted", k)
				}
			}
		}
	})
}

func TestSQLFunctions(t *testing.T) {
	u := "https://www.nexmark.com/ab/cd/ef/item.htm?query=1&channel_id=42"
	if SplitIndex(u, '/', 3) != "ab" || SplitIndex(u, '/', 5) != "ef" || SplitIndex("a/b", '/', 3) != nil {
		t.Errorf("SplitIndex: %v %v %v", SplitIndex(u, '/', 3), SplitIndex(u, '/', 5), SplitIndex("a/b", '/', 3))
	}
	if id, ok := ChannelID("channel-7", u); !ok || id != "42" {
		t.Errorf("ChannelID from the url: %q %v", id, ok)
	}
	if id, ok := ChannelID("Apple", ""); !ok || id != "0" {
		t.Errorf("ChannelID of Apple: %q %v", id, ok)
	}
	if _, ok := ChannelID("channel-7", "https://x/item.htm?query=1"); ok {
		t.Error("ChannelID without a channel_id")
	}
	if BidTimeType(1_767_225_600_000+9*3600_000) != "dayTime" || BidTimeType(1_767_225_600_000) != "nightTime" || BidTimeType(1_767_225_600_000+19*3600_000) != "otherTime" {
		t.Error("BidTimeType")
	}
}
