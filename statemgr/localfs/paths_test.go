package localfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/internal/treehash"
)

// TestCorruptJournalStaysInside: the undo journal is a file; a record
// whose target or backup leads outside the state directory is refused as
// corrupt, and nothing outside (nor inside) is touched.
func TestCorruptJournalStaysInside(t *testing.T) {
	for _, record := range []string{
		`{"op":"remove","target":"../victim"}`,
		`{"op":"remove","target":"tree/../../victim"}`,
		`{"op":"remove","target":"/abs/victim"}`,
		`{"op":"restore","target":"../victim","backup":"b-0"}`,
		`{"op":"restore","target":"tree/x","backup":"../../victim"}`,
	} {
		t.Run(record, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "state")
			if err := os.MkdirAll(filepath.Join(base, "victim"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(base, "victim", "data"), []byte("keep me"), 0o644); err != nil {
				t.Fatal(err)
			}
			m := open(t, root, 5*time.Second)
			if err := m.Create(ctxFor(t), "/a", []byte("x"), false); err != nil {
				t.Fatal(err)
			}
			m.Close()
			if err := os.MkdirAll(filepath.Join(root, txnDir, "b-0"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, txnDir, journalLog), []byte(record+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			before, err := treehash.Of(base)
			if err != nil {
				t.Fatal(err)
			}
			m2, err := Open(Options{Root: root, SessionTimeout: 5 * time.Second, PollInterval: 20 * time.Millisecond})
			if err == nil {
				_, err = m2.Get(ctxFor(t), "/a")
				m2.Close()
			}
			if err == nil || !strings.Contains(err.Error(), "corrupt") {
				t.Errorf("opening with a journal record %s: %v, want a corrupt-journal error", record, err)
			}
			after, err := treehash.Of(base)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range before.Diff(after) {
				if !strings.HasPrefix(d[2:], "state/sessions") && !strings.HasPrefix(d[2:], "state/trash") && d[2:] != "state/lock" && d[2:] != "state/sessions" {
					t.Errorf("a corrupt journal record changed %s", d)
				}
			}
		})
	}
}

// TestNodeDirsStayInside: the directory of every node is built through
// safepath; a path that slipped past nodepath.Check would be refused.
func TestNodeDirsStayInside(t *testing.T) {
	m := open(t, t.TempDir(), 5*time.Second)
	for _, p := range []string{"/..", "/a/../..", "/a//b"} {
		if d, err := m.dir(p); err == nil {
			t.Errorf("dir(%q) = %q, want a refusal", p, d)
		}
	}
	if d, err := m.dir("/topologies/wordcount"); err != nil || d != filepath.Join(m.root, treeDir, "topologies", "wordcount") {
		t.Errorf("dir = %q, %v", d, err)
	}
}
