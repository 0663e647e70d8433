package launcher

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/conf"
)

// lockedBuffer is a Progress writer read while written.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestBuildShowsProgress: while the go build of a topology package runs
// (a fake go that takes 600ms), submit says it is still building, then
// how long the build took.
func TestBuildShowsProgress(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\n# go build -o OUT PKG\nsleep 0.6\n: > \"$3\"\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	pkg := t.TempDir()
	if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte("package main\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	c, err := conf.Load(conf.LoadOptions{Cluster: "local", EgretHome: home, ConfigPath: filepath.Join(home, "conf")})
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	l := &Launcher{Cluster: c, Progress: &out, BuildProgressEvery: 100 * time.Millisecond}
	if _, err := l.binary(context.Background(), pkg, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if n := strings.Count(got, "still building "+pkg); n < 2 {
		t.Errorf("%d progress lines during a 600ms build with a 100ms interval, want at least 2:\n%s", n, got)
	}
	if !strings.Contains(got, "built "+pkg+" in ") {
		t.Errorf("no line saying the build ended:\n%s", got)
	}
}
