// Package verify certifies an external plugin binary: it loads the binary
// over go-plugin, as the egret CLI would, and runs the conformance suite of
// its kind (statemgrtest, uploadertest, packingtest, schedulertest,
// metricssinktest, checkpointtest) against
// it, reporting each check with a spitest.Reporter. It is what
// `egret plugin verify` runs.
package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/checkpoints/checkpointtest"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/spi/spitest"
	"github.com/egret-stream/egret/daemons/metricsmgr/metricssinktest"
	"github.com/egret-stream/egret/internal/fetch"
	"github.com/egret-stream/egret/packing/packingtest"
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/schedulers/schedulertest"
	"github.com/egret-stream/egret/statemgr/statemgrtest"
	"github.com/egret-stream/egret/uploaders/uploadertest"
)

// ErrBadInput is wrapped by the errors of Run that come from its input:
// a missing binary, a file that is not an Egret plugin, an unknown kind, a
// config the plugin rejects. The CLI exits 2 for them.
var ErrBadInput = errors.New("bad input")

// Options say what to verify and how.
type Options struct {
	// Path is the plugin binary, or the directory of its main package
	// (built with `go build` into a temporary directory first).
	Path string
	// Kind is the plugin kind (spi.KindScheduler, ...); empty: told
	// from the binary name egret-<kind>-<name>, else asked of the plugin
	// (the gRPC service it serves).
	Kind string
	// Name is the backend name given to the plugin's Configure; empty:
	// from the binary name egret-<kind>-<name>, else the file name.
	Name string
	// Config is the plugin's config: the target it runs the checks
	// against (a dev agent's address, a test namespace, a state file).
	Config spi.Config
	// Out gets the report.
	Out io.Writer
	// Log gets the loader's and the plugin's logs; nil discards them.
	Log *zap.Logger
	// StartTimeout bounds the plugin's start, handshake and Configure
	// (default 30s).
	StartTimeout time.Duration
	// CheckTimeout bounds each check (default 5 minutes).
	CheckTimeout time.Duration
	// OpTimeout bounds each scheduler operation and each wait of the
	// scheduler suite for containers (default 30s).
	OpTimeout time.Duration
	// FetchToken is the bearer token the uploader suite sends when it
	// fetches uploaded packages back over http(s), as executors would.
	FetchToken string
	// Verbose prints the checks' logs.
	Verbose bool
}

// Report is the outcome of a verification.
type Report struct {
	Kind, Name, Path string
	Results          []spitest.Result
	Pass, Fail, Skip int
}

// OK reports whether no check failed.
func (r *Report) OK() bool { return r.Fail == 0 }

// ParseBinaryName splits a plugin binary's file name egret-<kind>-<name>.
func ParseBinaryName(file string) (kind, name string, ok bool) {
	rest, found := strings.CutPrefix(filepath.Base(file), "egret-")
	if !found {
		return "", "", false
	}
	kind, name, found = strings.Cut(rest, "-")
	if !found || name == "" || !slices.Contains(spi.Kinds, kind) {
		return "", "", false
	}
	return kind, name, true
}

func badInput(format string, args ...any) error {
	return badInputError{fmt.Errorf(format, args...)}
}

// badInputError is an error of the input; errors.Is finds ErrBadInput.
type badInputError struct{ err error }

func (e badInputError) Error() string        { return e.err.Error() }
func (e badInputError) Unwrap() error        { return e.err }
func (e badInputError) Is(target error) bool { return target == ErrBadInput }

// Run verifies the plugin o describes, printing one line per check and a
// summary to o.Out. The error is nil when every check ran (some may have
// failed: see Report.OK); it wraps ErrBadInput when the input is wrong.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = 30 * time.Second
	}
	if o.Path == "" {
		return nil, badInput("no plugin binary given")
	}
	path, cleanup, err := binary(ctx, o.Path)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	kind, name, named := ParseBinaryName(path)
	if o.Kind != "" {
		if !slices.Contains(spi.Kinds, o.Kind) {
			return nil, badInput("unknown plugin kind %q (kinds: %s)", o.Kind, strings.Join(spi.Kinds, ", "))
		}
		if named && kind != o.Kind {
			name = ""
		}
		kind = o.Kind
	}
	loader := plugins.NewLoader(filepath.Dir(path), o.Log.Named("plugins"))
	defer loader.Close()
	if kind == "" {
		// Ask the plugin which service it serves.
		kctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
		kind, err = loader.Kind(kctx, path)
		cancel()
		if err != nil {
			return nil, badInput("cannot tell the kind of plugin %s (name it egret-<kind>-<name> or pass --kind %s): %w",
				path, strings.Join(spi.Kinds, "|"), err)
		}
	}
	if o.Name != "" {
		name = o.Name
	}
	if name == "" {
		name = filepath.Base(path)
	}
	v := &verifier{o: o, kind: kind, name: name, path: path, loader: loader}

	// The probe: the plugin must start, answer the handshake and accept
	// its config before any check runs.
	probe, closer, err := v.load(ctx)
	if err != nil {
		if errors.Is(err, spi.ErrPluginExited) {
			return nil, fmt.Errorf("verify %s plugin %s: it crashed while starting: %w", kind, path, err)
		}
		return nil, badInput("verify %s plugin %s: %w", kind, path, err)
	}
	defer closer.Close()

	rep := spitest.NewReporter(o.Out, spitest.Options{CheckTimeout: o.CheckTimeout, Verbose: o.Verbose})
	fmt.Fprintf(o.Out, "verifying %s plugin %q (%s), pid %d\n", kind, name, path, pid(probe))
	switch kind {
	case spi.KindStateManager:
		open := func(ctx context.Context) (spi.StateManager, error) {
			sm, _, err := v.load(ctx)
			if err != nil {
				return nil, err
			}
			return sm.(spi.StateManager), nil
		}
		rep.Run(ctx, kind, func(t spitest.T) { statemgrtest.RunOpen(t, open) })
		rep.Run(ctx, kind+"/Expiry", func(t spitest.T) { statemgrtest.RunExpiryOpen(t, open, crash) })
	case spi.KindUploader:
		open := func(ctx context.Context) (spi.Uploader, error) {
			u, _, err := v.load(ctx)
			if err != nil {
				return nil, err
			}
			return u.(spi.Uploader), nil
		}
		rep.Run(ctx, kind, func(t spitest.T) { uploadertest.Suite{Open: open, Fetch: fetch.Options{Token: o.FetchToken}}.Run(t) })
	case spi.KindMetricsSink:
		// No observer of the destination: the suite checks what the
		// host sees (batches accepted, cancellation, Close).
		rep.Run(ctx, kind, func(t spitest.T) {
			metricssinktest.Suite{Open: func(ctx context.Context) (spi.MetricsSink, error) {
				s, _, err := v.load(ctx)
				if err != nil {
					return nil, err
				}
				return s.(spi.MetricsSink), nil
			}}.Run(t)
		})
	case spi.KindCheckpointStorage:
		// No Damage hook: the host cannot reach the plugin's stored
		// bytes, so damaged state is not checked (the Corrupt check
		// skips).
		rep.Run(ctx, kind, func(t spitest.T) {
			checkpointtest.Suite{Open: func(ctx context.Context) (spi.CheckpointStorage, error) {
				s, _, err := v.load(ctx)
				if err != nil {
					return nil, err
				}
				return s.(spi.CheckpointStorage), nil
			}}.Run(t)
		})
	case spi.KindPacking:
		factory := func(cfg spi.Config) (spi.Packing, error) {
			// The suite's config replaces the operator's for packing: it
			// is what the checks vary.
			merged := v.o.Config.Clone()
			for k, val := range cfg {
				merged[k] = val
			}
			lctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
			defer cancel()
			p, _, err := loader.LoadBinary(lctx, kind, path, name, merged)
			if err != nil {
				return nil, err
			}
			return p.(spi.Packing), nil
		}
		rep.Run(ctx, kind, func(t spitest.T) {
			packingtest.Run(t, factory)
			packingtest.RunRepacking(t, factory)
		})
	case spi.KindScheduler:
		obs, _ := plugins.ObserverOf(probe.(spi.Scheduler))
		if _, err := obs.Containers(ctx, "egret-verify-probe"); err != nil {
			rep.Run(ctx, kind+"/Observer", func(t spitest.T) {
				t.Fatalf("the scheduler conformance suite looks at the resource manager itself, through the plugin's observer: %v", err)
			})
			break
		}
		rep.Run(ctx, kind, func(t spitest.T) {
			schedulertest.Run(t, schedulertest.Harness{
				Open: func(ctx context.Context, _ string) (spi.Scheduler, error) {
					s, _, err := v.load(ctx)
					if err != nil {
						return nil, err
					}
					return s.(spi.Scheduler), nil
				},
				Containers:   obs.Containers,
				Timeout:      o.OpTimeout,
				StrictErrors: true,
			})
		})
	}

	r := &Report{Kind: kind, Name: name, Path: path, Results: rep.Results()}
	r.Pass, r.Fail, r.Skip = rep.Counts()
	verdict := "PASS"
	if !r.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(o.Out, "%s: %s plugin %q: %d passed, %d failed, %d skipped\n", verdict, kind, name, r.Pass, r.Fail, r.Skip)
	return r, nil
}

type verifier struct {
	o                Options
	kind, name, path string
	loader           *plugins.Loader
}

// load starts a new plugin process configured with the operator's config.
func (v *verifier) load(ctx context.Context) (any, io.Closer, error) {
	ctx, cancel := context.WithTimeout(ctx, v.o.StartTimeout)
	defer cancel()
	return v.loader.LoadBinary(ctx, v.kind, v.path, v.name, v.o.Config)
}

// crash SIGKILLs the plugin process behind a state manager session, the
// statemgrtest.Crash of a plugin.
func crash(ctx context.Context, sm spi.StateManager) error {
	proc, ok := plugins.ProcessOf(sm)
	if !ok {
		return fmt.Errorf("%T is not backed by a plugin process", sm)
	}
	p, err := os.FindProcess(proc.Pid)
	if err != nil {
		return fmt.Errorf("find plugin process %d: %w", proc.Pid, err)
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill plugin process %d: %w", proc.Pid, err)
	}
	for !proc.Exited() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the host did not notice the death of plugin process %d: %w", proc.Pid, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

func pid(v any) int {
	if p, ok := plugins.ProcessOf(v); ok {
		return p.Pid
	}
	return 0
}

// binary returns the plugin binary at path, building it first when path is
// the directory of a main package.
func binary(ctx context.Context, path string) (string, func(), error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", nil, badInput("plugin binary %s: %w", path, err)
	}
	if !fi.IsDir() {
		if fi.Mode().Perm()&0o111 == 0 {
			return "", nil, badInput("plugin binary %s is not executable (chmod +x %s)", path, path)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", nil, badInput("plugin binary %s: %w", path, err)
		}
		return abs, func() {}, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, badInput("plugin package %s: %w", path, err)
	}
	if _, err := os.Stat(filepath.Join(abs, "go.mod")); err != nil {
		if matches, _ := filepath.Glob(filepath.Join(abs, "*.go")); len(matches) == 0 {
			return "", nil, badInput("%s is a directory without Go files: give a plugin binary or the directory of its main package", path)
		}
	}
	dir, err := os.MkdirTemp("", "egret-verify-build-")
	if err != nil {
		return "", nil, fmt.Errorf("build plugin %s: %w", path, err)
	}
	out := filepath.Join(dir, filepath.Base(abs))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = abs
	if b, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		msg := strings.Join(strings.Fields(string(b)), " ")
		return "", nil, badInput("build plugin %s: go build: %v: %s", path, err, msg)
	}
	return out, func() { _ = os.RemoveAll(dir) }, nil
}
