package loglevel

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func waitLevel(t *testing.T, atom zap.AtomicLevel, want zapcore.Level) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for atom.Level() != want {
		if time.Now().After(deadline) {
			t.Fatalf("level %s, want %s", atom.Level(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWatcherAppliesAndReverts(t *testing.T) {
	file := filepath.Join(t.TempDir(), FileName)
	atom := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	core, logs := observer.New(zapcore.DebugLevel)
	w := &Watcher{File: file, Names: []string{"word", "instance-word-1"}, Base: zapcore.InfoLevel, Level: atom, Every: 10 * time.Millisecond, Log: zap.New(core)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// Another component's override leaves this process alone.
	w.apply(Override{Level: "debug", Component: "count", Expires: time.Now().Add(time.Hour)}, time.Now())
	if atom.Level() != zapcore.InfoLevel {
		t.Fatalf("level %s after another component's override", atom.Level())
	}
	// Its own, with a short expiry: debug, then back to info.
	if err := Write(file, Override{Level: "debug", Component: "word", Expires: time.Now().Add(500 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	waitLevel(t, atom, zapcore.DebugLevel)
	waitLevel(t, atom, zapcore.InfoLevel)
	// Every process (no component), then the file removed.
	if err := Write(file, Override{Level: "error", Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	waitLevel(t, atom, zapcore.ErrorLevel)
	if logs.FilterMessage("log level changed").Len() < 3 {
		t.Errorf("changes logged: %v", logs.All())
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	waitLevel(t, atom, zapcore.InfoLevel)
}

func TestOverrideChecks(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), FileName), Override{Level: "trace", Expires: time.Now()}); err == nil {
		t.Error("Write accepted level trace")
	}
	if err := Write(filepath.Join(t.TempDir(), FileName), Override{Level: "debug"}); err == nil {
		t.Error("Write accepted an override without expiry")
	}
	file := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(file, []byte(`{"level":"verbose","expires":"2030-01-01T00:00:00Z"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(file); err == nil {
		t.Error("Read accepted level verbose")
	}
	if o, err := Read(filepath.Join(t.TempDir(), "missing")); err != nil || o.Level != "" {
		t.Errorf("Read of a missing file = %+v, %v", o, err)
	}
}

func TestFromEnvWithoutFile(t *testing.T) {
	t.Setenv(EnvFile, "")
	w := FromEnv(zap.NewAtomicLevel(), zap.NewNop())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(context.Background()) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run without a file did not return")
	}
}
