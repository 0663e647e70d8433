package loglevel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Environment variables the executor sets for every child.
const (
	// EnvFile is the path of the container's override file.
	EnvFile = "EGRET_LOGLEVEL_FILE"
	// EnvProcess is the process name (stmgr, instance-word-1, ...).
	EnvProcess = "EGRET_PROCESS"
	// EnvComponent is the component of an instance, or the kind of a
	// daemon (tmanager, stmgr, metricsmgr, shell).
	EnvComponent = "EGRET_COMPONENT"
)

// FileName is the override file's name in the container's directory.
const FileName = "loglevel.json"

// PollInterval is how often processes read the override file.
const PollInterval = time.Second

// MaxDuration bounds an override.
const MaxDuration = 24 * time.Hour

// Override is the content of the override file.
type Override struct {
	// Level is debug, info, warn or error.
	Level string `json:"level"`
	// Component restricts the override to the processes of one component
	// (or one daemon kind); "" applies it to every process.
	Component string    `json:"component,omitempty"`
	Expires   time.Time `json:"expires"`
}

// ParseLevel accepts the levels an override may set.
func ParseLevel(s string) (zapcore.Level, error) {
	switch s {
	case "debug", "info", "warn", "error":
		var l zapcore.Level
		return l, l.UnmarshalText([]byte(s))
	}
	return 0, fmt.Errorf("log level %q is not one of debug, info, warn, error", s)
}

// Check validates an override.
func (o Override) Check() error {
	if _, err := ParseLevel(o.Level); err != nil {
		return err
	}
	if o.Expires.IsZero() {
		return errors.New("the override has no expiry")
	}
	return nil
}

// Applies reports whether o is in force at now for a process known by
// names (its component or kind, and its process name).
func (o Override) Applies(now time.Time, names ...string) bool {
	return now.Before(o.Expires) && (o.Component == "" || slices.Contains(names, o.Component))
}

// Write replaces the override file atomically.
func Write(path string, o Override) error {
	if err := o.Check(); err != nil {
		return err
	}
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".loglevel-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Read reads the override file; a missing file is (Override{}, nil).
func Read(path string) (Override, error) {
	var o Override
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return o, nil
	}
	if err != nil {
		return o, err
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return Override{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := o.Check(); err != nil {
		return Override{}, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}

// Watcher keeps a zap.AtomicLevel in line with the override file.
type Watcher struct {
	// File is the override file ("": Run returns at once).
	File string
	// Names are what an override's component is matched against.
	Names []string
	// Base is the configured level, restored when no override applies.
	Base  zapcore.Level
	Level zap.AtomicLevel
	// Every is the poll interval (0: PollInterval).
	Every time.Duration
	Log   *zap.Logger
}

// FromEnv returns a watcher of the file the executor named in the
// environment, for a process whose configured level is level.
func FromEnv(level zap.AtomicLevel, log *zap.Logger) *Watcher {
	var names []string
	for _, k := range []string{EnvComponent, EnvProcess} {
		if v := os.Getenv(k); v != "" {
			names = append(names, v)
		}
	}
	return &Watcher{File: os.Getenv(EnvFile), Names: names, Base: level.Level(), Level: level, Log: log}
}

// Run polls until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	if w.File == "" {
		return
	}
	every := w.Every
	if every <= 0 {
		every = PollInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	warned := false
	for {
		o, err := Read(w.File)
		switch {
		case err != nil && !warned:
			w.Log.Warn("cannot read the log-level override; keeping the current level", zap.Error(err))
			warned = true
		case err == nil:
			warned = false
			w.apply(o, time.Now())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *Watcher) apply(o Override, now time.Time) {
	want := w.Base
	if o.Level != "" && o.Applies(now, w.Names...) {
		want, _ = ParseLevel(o.Level)
	}
	if want == w.Level.Level() {
		return
	}
	// Said at the more verbose of the two levels, so it is seen.
	old := w.Level.Level()
	w.Level.SetLevel(min(want, old))
	w.Log.Log(min(want, old), "log level changed", zap.Stringer("from", old), zap.Stringer("to", want), zap.Time("until", o.Expires))
	w.Level.SetLevel(want)
}
