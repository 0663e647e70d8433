package logfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t *testing.T, lf *File, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if n, err := lf.Write([]byte(p)); err != nil || n != len(p) {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
}

// files lists the names in dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestRotatesBySizeAndKeepsMaxFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stmgr.log")
	lf, err := Open(path, Limits{MaxSize: 10, MaxFiles: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	// 4-byte writes: two fit in 10 bytes, the third rotates.
	write(t, lf, "a01\n", "a02\n", "a03\n", "a04\n", "a05\n", "a06\n", "a07\n")
	if got := strings.Join(files(t, dir), " "); got != "stmgr.log stmgr.log.1 stmgr.log.2" {
		t.Fatalf("files %s", got)
	}
	for name, want := range map[string]string{"stmgr.log": "a07\n", "stmgr.log.1": "a05\na06\n", "stmgr.log.2": "a03\na04\n"} {
		if got := read(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestWritesAreNeverSplit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	lf, err := Open(path, Limits{MaxSize: 8, MaxFiles: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	write(t, lf, "123", "a write larger than the limit\n", "456")
	if got := read(t, path+".2"); got != "123" {
		t.Errorf(".2 = %q", got)
	}
	if got := read(t, path+".1"); got != "a write larger than the limit\n" {
		t.Errorf(".1 = %q: a large write goes alone into a file, whole", got)
	}
	if got := read(t, path); got != "456" {
		t.Errorf("current = %q", got)
	}
}

func TestReopenCountsTheExistingSize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	if err := os.WriteFile(path, []byte("earlier run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lf, err := Open(path, Limits{MaxSize: 17, MaxFiles: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	write(t, lf, "more\n", "then\n")
	lf.Close()
	if got, want := read(t, path+".1"), "earlier run\nmore\n"; got != want {
		t.Errorf(".1 = %q, want %q (appended, then rotated at the limit)", got, want)
	}
	if got := read(t, path); got != "then\n" {
		t.Errorf("current = %q", got)
	}
}

func TestNoRotatedFilesKept(t *testing.T) {
	dir := t.TempDir()
	lf, err := Open(filepath.Join(dir, "x.log"), Limits{MaxSize: 4, MaxFiles: 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	write(t, lf, "1234", "5678", "9")
	if got := strings.Join(files(t, dir), " "); got != "x.log" {
		t.Fatalf("files %s", got)
	}
	if got := read(t, filepath.Join(dir, "x.log")); got != "9" {
		t.Errorf("current = %q", got)
	}
}

func TestSmallerLimitDeletesOlderRotations(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	for _, suffix := range []string{"", ".1", ".2", ".3", ".4"} {
		if err := os.WriteFile(path+suffix, []byte("old"+suffix), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lf, err := Open(path, Limits{MaxSize: 4, MaxFiles: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	write(t, lf, "new")
	if got := strings.Join(files(t, dir), " "); got != "x.log x.log.1 x.log.2" {
		t.Fatalf("files %s", got)
	}
	for name, want := range map[string]string{"x.log": "new", "x.log.1": "old", "x.log.2": "old.1"} {
		if got := read(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

// A rotation that fails loses nothing: the file keeps growing and the
// failure is logged.
func TestFailedRotationKeepsWriting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	// A non-empty directory where the rotated file should go.
	if err := os.MkdirAll(filepath.Join(path+".1", "busy"), 0o755); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	lf, err := Open(path, Limits{MaxSize: 4, MaxFiles: 1}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	write(t, lf, "1234", "5678")
	if got := read(t, path); got != "12345678" {
		t.Errorf("current = %q, want every write", got)
	}
	if logs.FilterMessage("cannot rotate the log file; it keeps growing").Len() != 1 {
		t.Errorf("logs %v", logs.All())
	}
	if err := lf.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := lf.Write([]byte("late")); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, l := range []Limits{{MaxSize: 0, MaxFiles: 1}, {MaxSize: -1}, {MaxSize: 1, MaxFiles: -1}} {
		if _, err := Open(filepath.Join(t.TempDir(), "x.log"), l, nil); err == nil {
			t.Errorf("Open with %+v: no error", l)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "no", "dir", "x.log"), Limits{MaxSize: 1}, nil); err == nil {
		t.Error("Open in a missing directory: no error")
	}
}
