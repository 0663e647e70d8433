package plugins_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/plugins/internal/fakes"
	"github.com/egret-stream/egret/plugins/plugintest"
	smlocalfs "github.com/egret-stream/egret/statemgr/localfs"
	"github.com/egret-stream/egret/statemgr/statemgrtest"
	"github.com/egret-stream/egret/uploaders/localfs"
	"github.com/egret-stream/egret/uploaders/uploadertest"
)

func TestLoaderUsesBuiltins(t *testing.T) {
	l := plugins.NewLoader(t.TempDir(), zaptest.NewLogger(t))
	defer l.Close()
	u, err := l.LoadUploader(testCtx(t), "localfs", spi.Config{localfs.KeyDirectory: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, ok := u.(*localfs.Uploader); !ok {
		t.Fatalf("built-in localfs loaded as %T", u)
	}
	if _, ok := plugins.ProcessOf(u); ok {
		t.Fatal("a built-in has a plugin process")
	}
	// A name that is neither built in nor installed: the error lists the
	// built-ins (this test binary has localfs among the uploaders).
	if _, err := l.LoadUploader(testCtx(t), "nosuch", nil); err == nil || !strings.Contains(err.Error(), "(built in: [") || !strings.Contains(err.Error(), "localfs") {
		t.Fatalf("load of an unknown uploader: %v; want the built-ins listed", err)
	}
}

func TestLoaderErrors(t *testing.T) {
	dir := pluginDir(t, [2]string{"scheduler", "noisy"}, [2]string{"scheduler", "basic"})
	if err := os.WriteFile(filepath.Join(dir, "egret-scheduler-plain"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "egret-scheduler-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "egret-scheduler-false"), []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir, backend string
		cfg                spi.Config
		want               []string
		unknown            bool
	}{
		{name: "missing", dir: dir, backend: "nomadx", unknown: true,
			want: []string{`scheduler "nomadx" is not built in`, filepath.Join(dir, "egret-scheduler-nomadx")}},
		{name: "no directory", dir: "", backend: "nomadx", unknown: true,
			want: []string{"no plugin directory is configured", "egret.plugin.directory", "egret-scheduler-nomadx"}},
		{name: "invalid name", dir: dir, backend: "../basic", unknown: true, want: []string{`"../basic" is invalid`}},
		{name: "not executable", dir: dir, backend: "plain", want: []string{"is not executable", "chmod +x"}},
		{name: "directory", dir: dir, backend: "dir", want: []string{"is a directory"}},
		{name: "not a plugin", dir: dir, backend: "false", want: []string{"start scheduler plugin", "protocol version 1"}},
		{name: "stdout before Serve", dir: dir, backend: "noisy", want: []string{"start scheduler plugin", "hello from a plugin"}},
		{name: "factory fails", dir: dir, backend: "basic", cfg: spi.Config{"test.fail": "no such cluster"},
			want: []string{"no such cluster", "egret-scheduler-basic"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := plugins.NewLoader(tc.dir, zaptest.NewLogger(t))
			defer l.Close()
			s, err := l.LoadScheduler(testCtx(t), tc.backend, tc.cfg)
			if err == nil {
				s.Close()
				t.Fatal("loaded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if errors.Is(err, spi.ErrUnknownBackend) != tc.unknown {
				t.Errorf("errors.Is(%q, ErrUnknownBackend) = %v, want %v", err, !tc.unknown, tc.unknown)
			}
			if n := plugins.Running(l); n != 0 {
				t.Errorf("%d plugin processes left running after a failed load", n)
			}
		})
	}
}

// TestFind checks a backend's existence without starting anything: a
// built-in, a plugin binary, or an error naming what to do.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "egret-scheduler-plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\nexit 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A "plugin" that would leave a mark if Find started it.
	mark := filepath.Join(dir, "started")
	if err := os.WriteFile(filepath.Join(dir, "egret-scheduler-k8s"), []byte("#!/bin/sh\ntouch "+mark+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := plugins.NewLoader(dir, zaptest.NewLogger(t))
	defer l.Close()
	for _, tc := range []struct {
		kind, name, path string
		want             []string
		unknown          bool
	}{
		{kind: "uploader", name: "localfs"},
		{kind: "scheduler", name: "k8s", path: filepath.Join(dir, "egret-scheduler-k8s")},
		{kind: "scheduler", name: "borg", unknown: true,
			want: []string{`scheduler "borg" is not built in`, filepath.Join(dir, "egret-scheduler-borg"), "set egret.plugin.directory"}},
		{kind: "packing", name: "spiral", unknown: true, want: []string{`packing algorithm "spiral" is not built in`}},
		{kind: "scheduler", name: "plain", want: []string{"is not executable", "chmod +x " + plain}},
		{kind: "scheduler", name: "../k8s", unknown: true, want: []string{`"../k8s" is invalid`}},
		{kind: "sink", name: "file", want: []string{`unknown plugin kind "sink"`}},
	} {
		path, err := l.Find(tc.kind, tc.name)
		if tc.want == nil {
			if err != nil || path != tc.path {
				t.Errorf("Find(%s, %s) = %q, %v; want %q", tc.kind, tc.name, path, err, tc.path)
			}
			continue
		}
		if err == nil {
			t.Errorf("Find(%s, %s) = %q, want an error", tc.kind, tc.name, path)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Find(%s, %s): %q does not contain %q", tc.kind, tc.name, err, w)
			}
		}
		if errors.Is(err, spi.ErrUnknownBackend) != tc.unknown {
			t.Errorf("Find(%s, %s): errors.Is(%q, ErrUnknownBackend) = %v", tc.kind, tc.name, err, !tc.unknown)
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("Find started the plugin")
	}
	if n := plugins.Running(l); n != 0 {
		t.Errorf("%d plugin processes running after Find", n)
	}
	if _, err := plugins.NewLoader("", nil).Find("scheduler", "k8s"); err == nil || !strings.Contains(err.Error(), "no plugin directory is configured") {
		t.Errorf("Find without a plugin directory: %v", err)
	}
}

func TestLoadCanceled(t *testing.T) {
	l := plugins.NewLoader(pluginDir(t, [2]string{"scheduler", "basic"}), zaptest.NewLogger(t))
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.LoadScheduler(ctx, "basic", nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("load with a canceled context: %v", err)
	}
	if n := plugins.Running(l); n != 0 {
		t.Errorf("%d plugin processes left running", n)
	}
}

// Every state manager call through a real plugin process.
func TestStateManagerPlugin(t *testing.T) {
	ctx := testCtx(t)
	l := plugins.NewLoader(pluginDir(t, [2]string{"statemgr", "memory"}), zaptest.NewLogger(t))
	defer l.Close()
	sm, err := l.LoadStateManager(ctx, "memory", spi.Config{"test.session.timeout": "1500ms"})
	if err != nil {
		t.Fatal(err)
	}
	proc, ok := plugins.ProcessOf(sm)
	if !ok || proc.Pid <= 0 || proc.Exited() {
		t.Fatalf("ProcessOf = %+v, %v", proc, ok)
	}
	if d := sm.SessionTimeout(); d != 1500*time.Millisecond {
		t.Errorf("SessionTimeout = %v", d)
	}

	events, err := sm.Watch(ctx, "/t/node")
	if err != nil {
		t.Fatal(err)
	}
	must(t, sm.Create(ctx, "/t/node", []byte("v0"), false))
	waitFor(t, events, spi.EventCreated)
	if err := sm.Create(ctx, "/t/node", nil, false); !errors.Is(err, spi.ErrExists) {
		t.Fatalf("second Create: %v", err)
	}
	v, err := sm.Set(ctx, "/t/node", []byte("v1"), 0)
	if err != nil || v != 1 {
		t.Fatalf("Set = %d, %v", v, err)
	}
	waitFor(t, events, spi.EventDataChanged)
	if _, err := sm.Set(ctx, "/t/node", nil, 0); !errors.Is(err, spi.ErrVersionConflict) {
		t.Fatalf("Set with a stale version: %v", err)
	}
	must(t, sm.Create(ctx, "/t/node/b", nil, false))
	must(t, sm.Create(ctx, "/t/node/a", nil, true))
	waitFor(t, events, spi.EventChildrenChanged)
	n, err := sm.Get(ctx, "/t/node/a")
	if err != nil || !n.Ephemeral || n.Version != 0 {
		t.Fatalf("Get ephemeral = %+v, %v", n, err)
	}
	kids, err := sm.Children(ctx, "/t/node")
	if err != nil || !slices.Equal(kids, []string{"a", "b"}) {
		t.Fatalf("Children = %v, %v", kids, err)
	}
	if kids, err := sm.Children(ctx, "/t/node/b"); err != nil || kids == nil || len(kids) != 0 {
		t.Fatalf("Children of a leaf = %#v, %v; want an empty list", kids, err)
	}
	if _, err := sm.Children(ctx, "/missing"); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("Children of a missing node: %v", err)
	}
	if _, err := sm.Get(ctx, "bad path"); err == nil || !strings.Contains(err.Error(), "bad path") {
		t.Fatalf("Get of an invalid path: %v", err)
	}
	err = sm.Multi(ctx, spi.Op{Kind: spi.OpDelete, Path: "/t/node/b"}, spi.Op{Kind: spi.OpCheck, Path: "/t/node", Version: 0})
	if !errors.Is(err, spi.ErrVersionConflict) {
		t.Fatalf("Multi with a failing check: %v", err)
	}
	if _, err := sm.Get(ctx, "/t/node/b"); err != nil {
		t.Fatalf("a failed Multi deleted /t/node/b: %v", err)
	}

	unlock, err := sm.Lock(ctx, "/locks/l")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = sm.Lock(short, "/locks/l")
	cancel()
	if !errors.Is(err, spi.ErrLockHeld) {
		t.Fatalf("Lock of a held lock: %v, want ErrLockHeld", err)
	}
	must(t, unlock())
	must(t, unlock()) // idempotent
	unlock, err = sm.Lock(ctx, "/locks/l")
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	must(t, unlock())

	must(t, sm.Delete(ctx, "/t/node", spi.AnyVersion))
	waitFor(t, events, spi.EventDeleted)
	if _, err := sm.Get(ctx, "/t/node"); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}

	must(t, sm.Close())
	must(t, sm.Close())
	if !proc.Exited() {
		t.Fatal("the plugin process runs on after Close")
	}
	if _, ok := <-events; ok {
		// Events may still be buffered; the channel must close.
		for range events {
		}
	}
	if _, err := sm.Get(ctx, "/"); !errors.Is(err, spi.ErrClosed) {
		t.Fatalf("Get after Close: %v, want ErrClosed", err)
	}
	if n := plugins.Running(l); n != 0 {
		t.Fatalf("loader tracks %d processes after Close", n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, events <-chan spi.Event, want spi.EventType) {
	t.Helper()
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("watch closed while waiting for event %d", want)
			}
			if e.Type == want {
				return
			}
		case <-timer.C:
			t.Fatalf("no event %d within 15s", want)
		}
	}
}

func TestPluginCrash(t *testing.T) {
	ctx := testCtx(t)
	l := plugins.NewLoader(pluginDir(t, [2]string{"statemgr", "memory"}), zaptest.NewLogger(t))
	defer l.Close()
	sm, err := l.LoadStateManager(ctx, "memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	events, err := sm.Watch(ctx, "/x")
	if err != nil {
		t.Fatal(err)
	}
	plugintest.Crash(t, sm)
	_, err = sm.Get(ctx, "/x")
	if !errors.Is(err, spi.ErrPluginExited) || !strings.Contains(err.Error(), "egret-statemgr-memory") {
		t.Fatalf("Get after the plugin died: %v, want spi.ErrPluginExited naming the plugin", err)
	}
	waitFor(t, events, spi.EventSessionLost)
	if _, ok := <-events; ok {
		t.Fatal("watch channel still open after the plugin died")
	}
	if err := sm.Close(); err != nil {
		t.Fatalf("Close after the plugin died: %v", err)
	}
}

func TestPluginExitsDuringCall(t *testing.T) {
	l := plugins.NewLoader(pluginDir(t, [2]string{"statemgr", "memory"}), zaptest.NewLogger(t))
	defer l.Close()
	sm, err := l.LoadStateManager(testCtx(t), "memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	_, err = sm.Get(testCtx(t), fakes.ExitPath)
	if !errors.Is(err, spi.ErrPluginExited) {
		t.Fatalf("a call during which the plugin exits: %v, want spi.ErrPluginExited", err)
	}
}

func TestLoaderCloseKillsPlugins(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := plugins.NewLoader(pluginDir(t, [2]string{"statemgr", "memory"}, [2]string{"scheduler", "basic"}), zap.New(core))
	sm, err := l.LoadStateManager(testCtx(t), "memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.LoadScheduler(testCtx(t), "basic", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := plugins.Running(l); n != 2 {
		t.Fatalf("Running = %d", n)
	}
	must(t, l.Close())
	// Stopped without Close, each plugin still closed its backend.
	if n := logs.FilterMessage("plugin stopping: closing the backend").Len(); n != 2 {
		t.Errorf("%d plugins closed their backend on Loader.Close, want 2", n)
	}
	for _, v := range []any{sm, s} {
		if p, _ := plugins.ProcessOf(v); !p.Exited() {
			t.Errorf("plugin %s runs on after Loader.Close", p.Path)
		}
	}
	if err := s.Kill(testCtx(t), "x"); !errors.Is(err, spi.ErrPluginExited) {
		t.Errorf("call after Loader.Close: %v", err)
	}
	if _, err := l.LoadScheduler(testCtx(t), "basic", nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("load after Loader.Close: %v", err)
	}
}

func TestSchedulerPlugin(t *testing.T) {
	dir := pluginDir(t, [2]string{"scheduler", "recorder"}, [2]string{"scheduler", "basic"})
	for _, tc := range []struct {
		name          string
		launch, scale bool
	}{{"recorder", true, true}, {"basic", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			l := plugins.NewLoader(dir, zaptest.NewLogger(t))
			defer l.Close()
			s, err := l.LoadScheduler(testCtx(t), tc.name, nil)
			if err != nil {
				t.Fatal(err)
			}
			exerciseScheduler(t, s, tc.launch, tc.scale)
			p, _ := plugins.ProcessOf(s)
			must(t, s.Close())
			if !p.Exited() {
				t.Fatal("plugin runs on after Close")
			}
		})
	}
}

func TestPackingPlugin(t *testing.T) {
	dir := pluginDir(t, [2]string{"packing", "percomponent"}, [2]string{"packing", "packonly"})
	for _, tc := range []struct {
		name   string
		repack bool
	}{{"percomponent", true}, {"packonly", false}} {
		t.Run(tc.name, func(t *testing.T) {
			l := plugins.NewLoader(dir, zaptest.NewLogger(t))
			defer l.Close()
			p, closer, err := l.LoadPacking(testCtx(t), tc.name, spi.Config{"test.max.tasks": "3"})
			if err != nil {
				t.Fatal(err)
			}
			exercisePacking(t, p, tc.repack)
			proc, _ := plugins.ProcessOf(p)
			must(t, closer.Close())
			if !proc.Exited() {
				t.Fatal("plugin runs on after Close")
			}
		})
	}
}

// The uploader conformance suite against the localfs uploader served by a
// plugin process.
func TestUploaderConformancePlugin(t *testing.T) {
	bin := plugintest.Build(t, testPlugin)
	uploadertest.Run(t, func(t *testing.T) spi.Uploader {
		dir := t.TempDir()
		plugintest.Install(t, dir, spi.KindUploader, "fs", bin)
		u, err := plugintest.NewLoader(t, dir).LoadUploader(testCtx(t), "fs", spi.Config{localfs.KeyDirectory: filepath.Join(t.TempDir(), "repo")})
		if err != nil {
			t.Fatal(err)
		}
		return u
	})
}

// Plugin logs arrive in the host's zap logger as structured entries, and
// what the plugin prints on stdout arrives as log lines.
func TestPluginLogsAreStructured(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	l := plugins.NewLoader(pluginDir(t, [2]string{"statemgr", "memory"}), zap.New(core))
	defer l.Close()
	sm, err := l.LoadStateManager(testCtx(t), "memory", spi.Config{"test.session.timeout": "2s", "test.stdout": "hello on stdout"})
	if err != nil {
		t.Fatal(err)
	}
	// Stdout is forwarded asynchronously (and what is in flight when the
	// plugin exits is lost): wait for the line before closing.
	deadline := time.Now().Add(15 * time.Second)
	for logs.FilterMessage("hello on stdout").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the plugin's stdout line did not reach the host log within 15s: %v", logs.All())
		}
		time.Sleep(10 * time.Millisecond)
	}
	must(t, sm.Close())
	entries := logs.FilterMessage("memory state manager configured").All()
	if len(entries) != 1 {
		t.Fatalf("plugin log entry not re-emitted; host saw %d entries: %v", logs.Len(), logs.All())
	}
	e := entries[0]
	fields := e.ContextMap()
	if e.Level != zapcore.InfoLevel || fields["session_timeout"] != "2s" || fields["backend"] != "memory" || fields["kind"] != "statemgr" {
		t.Fatalf("re-emitted entry: level %v logger %q fields %v", e.Level, e.LoggerName, fields)
	}
	if !strings.Contains(e.LoggerName, "plugin") {
		t.Errorf("logger name %q does not say plugin", e.LoggerName)
	}
	out := logs.FilterMessage("hello on stdout").All()
	if len(out) != 1 || out[0].ContextMap()["stream"] != "stdout" {
		t.Errorf("stdout line: %v", out)
	}
}

// The host's log level reaches the plugin: a debug-level host gets the
// plugin's debug lines, which a plugin logs only when told to.
func TestPluginLogLevelFollowsHost(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := plugins.NewLoader(pluginDir(t, [2]string{"statemgr", "memory"}), zap.New(core))
	defer l.Close()
	sm, err := l.LoadStateManager(testCtx(t), "memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	must(t, sm.Close())
	got := logs.FilterMessage("plugin configured").FilterLevelExact(zapcore.DebugLevel)
	if got.Len() != 1 {
		t.Fatalf("plugin debug line not seen by a debug-level host: %v", logs.All())
	}
}

// The state manager conformance suite, expiry included, against the
// localfs state manager served by plugin processes: every session is its
// own plugin process on a shared root directory, and a crash is a SIGKILL
// of the plugin.
func TestStateManagerConformancePlugin(t *testing.T) {
	dir := t.TempDir()
	plugintest.Install(t, dir, spi.KindStateManager, "fsplugin", plugintest.Build(t, localfsPlugin))
	l := plugintest.NewLoader(t, dir)
	cfg := spi.Config{
		smlocalfs.KeyRootPath:       t.TempDir(),
		smlocalfs.KeySessionTimeout: "1s",
		smlocalfs.KeyPollInterval:   "20ms",
	}
	newSession := func(t *testing.T) spi.StateManager {
		sm, err := l.LoadStateManager(testCtx(t), "fsplugin", cfg)
		if err != nil {
			t.Fatal(err)
		}
		return sm
	}
	t.Run("Run", func(t *testing.T) { statemgrtest.Run(t, newSession) })
	t.Run("Expiry", func(t *testing.T) {
		statemgrtest.RunExpiry(t, newSession, func(t *testing.T, sm spi.StateManager) { plugintest.Crash(t, sm) })
	})
}
