package plugintest

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
)

// loadTimeout bounds starting and configuring one plugin.
const loadTimeout = time.Minute

// NewLoader returns a loader of the plugins in dir that logs to t and is
// closed (killing its plugins) when the test ends.
func NewLoader(t testing.TB, dir string) *plugins.Loader {
	t.Helper()
	l := plugins.NewLoader(dir, zaptest.NewLogger(t))
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func loadCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	t.Cleanup(cancel)
	return ctx
}

// plugin builds pkg and installs it as kind/name in a fresh directory.
func plugin(t testing.TB, pkg, kind, name string) *plugins.Loader {
	t.Helper()
	dir := t.TempDir()
	Install(t, dir, kind, name, Build(t, pkg))
	return NewLoader(t, dir)
}

// LoadStateManager builds the plugin main package pkg, installs it as the
// state manager name and loads it as a subprocess with cfg. The session is
// closed when the test ends.
func LoadStateManager(t testing.TB, pkg, name string, cfg spi.Config) spi.StateManager {
	t.Helper()
	sm, err := plugin(t, pkg, spi.KindStateManager, name).LoadStateManager(loadCtx(t), name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOrExited(t, sm) })
	return sm
}

// LoadUploader is LoadStateManager for an uploader.
func LoadUploader(t testing.TB, pkg, name string, cfg spi.Config) spi.Uploader {
	t.Helper()
	u, err := plugin(t, pkg, spi.KindUploader, name).LoadUploader(loadCtx(t), name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOrExited(t, u) })
	return u
}

// LoadPacking is LoadStateManager for a packing algorithm.
func LoadPacking(t testing.TB, pkg, name string, cfg spi.Config) spi.Packing {
	t.Helper()
	p, closer, err := plugin(t, pkg, spi.KindPacking, name).LoadPacking(loadCtx(t), name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOrExited(t, closer) })
	return p
}

// LoadScheduler is LoadStateManager for a scheduler.
func LoadScheduler(t testing.TB, pkg, name string, cfg spi.Config) spi.Scheduler {
	t.Helper()
	s, err := plugin(t, pkg, spi.KindScheduler, name).LoadScheduler(loadCtx(t), name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOrExited(t, s) })
	return s
}

// closeOrExited closes c, accepting that a test already closed it or
// killed its plugin.
func closeOrExited(t testing.TB, c io.Closer) {
	if err := c.Close(); err != nil && !errors.Is(err, spi.ErrPluginExited) && !errors.Is(err, spi.ErrClosed) {
		t.Errorf("close: %v", err)
	}
}

// Crash kills the plugin process behind v with SIGKILL, the way a crash
// ends it, and waits until the host has noticed. Use it as the Kill of
// statemgrtest.RunExpiry.
func Crash(t testing.TB, v any) {
	t.Helper()
	proc, ok := plugins.ProcessOf(v)
	if !ok {
		t.Fatalf("plugintest: %T is not backed by a plugin process", v)
	}
	p, err := os.FindProcess(proc.Pid)
	if err != nil {
		t.Fatalf("plugintest: find plugin process %d: %v", proc.Pid, err)
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("plugintest: kill plugin process %d: %v", proc.Pid, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !proc.Exited() {
		if time.Now().After(deadline) {
			t.Fatalf("plugintest: the host did not notice the death of plugin process %d", proc.Pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
