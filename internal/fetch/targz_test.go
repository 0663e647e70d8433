package fetch_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/egret-stream/egret/internal/fetch"
)

func TestCreateTarGzDeterministic(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	defn := filepath.Join(dir, "defn")
	writeFile(t, bin, "binary")
	os.Chmod(bin, 0o700) // any execute bit -> 0755 in the archive
	writeFile(t, defn, "definition")
	files := map[string]string{"topology": bin, "wc.defn": defn, "egret-conf/a.yaml": defn}

	sha1, err := fetch.CreateTarGz(filepath.Join(dir, "1.tar.gz"), files)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(bin, later, later) // mtimes do not matter
	sha2, err := fetch.CreateTarGz(filepath.Join(dir, "2.tar.gz"), files)
	if err != nil {
		t.Fatal(err)
	}
	if sha1 != sha2 {
		t.Fatalf("same inputs gave digests %s and %s", sha1, sha2)
	}
	got, err := fetch.SHA256File(context.Background(), filepath.Join(dir, "1.tar.gz"))
	if err != nil || got != sha1 {
		t.Fatalf("SHA256File = %s, %v; CreateTarGz said %s", got, err, sha1)
	}
	writeFile(t, defn, "definition 2")
	sha3, err := fetch.CreateTarGz(filepath.Join(dir, "3.tar.gz"), files)
	if err != nil || sha3 == sha1 {
		t.Fatalf("changed content gave %s, %v (before %s)", sha3, err, sha1)
	}

	out := filepath.Join(dir, "out")
	if err := fetch.Extract(context.Background(), filepath.Join(dir, "1.tar.gz"), out); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(out, "topology"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("topology: %v, %v; want mode 0755", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "egret-conf/a.yaml")); string(b) != "definition" {
		t.Fatalf("egret-conf/a.yaml = %q", b)
	}
}

func TestCreateTarGzRejects(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	writeFile(t, src, "x")
	for _, name := range []string{"", "../x", "/abs", "a//b", "./a", "a/", ".", `a\b`} {
		if _, err := fetch.CreateTarGz(filepath.Join(dir, "p.tar.gz"), map[string]string{name: src}); err == nil {
			t.Errorf("archive name %q accepted", name)
		}
	}
	if _, err := fetch.CreateTarGz(filepath.Join(dir, "p.tar.gz"), map[string]string{"a": dir}); err == nil {
		t.Error("directory source accepted")
	}
	if _, err := fetch.CreateTarGz(filepath.Join(dir, "p.tar.gz"), nil); err == nil {
		t.Error("empty file set accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "p.tar.gz")); err == nil {
		t.Error("failed CreateTarGz left its output")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temp files left: %v", entries)
	}
}
