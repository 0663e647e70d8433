package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
)

// DefaultStartTimeout bounds how long a plugin may take to start and
// answer the handshake when the context has no earlier deadline.
const DefaultStartTimeout = time.Minute

// validName is the syntax of a backend name.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Loader gives the implementation of an SPI kind by name: the built-in one
// registered under the name (spi.Lookup*), or else the plugin binary
// <dir>/egret-<kind>-<name>, started as a subprocess.
//
// A plugin process lives until the value it backs is closed (or, for
// packing, its io.Closer), until Loader.Close, or until the host process
// dies: on Linux the plugin gets SIGKILL when its host dies, and plugins
// served by this package also watch their parent.
type Loader struct {
	dir string
	log *zap.Logger

	// parentDeathSignal sets the Linux parent-death signal on plugin
	// processes; tests turn it off to check the plugin-side watchdog.
	parentDeathSignal bool
	// env is added to every plugin's environment.
	env []string

	mu      sync.Mutex
	running map[*Process]struct{}
	closed  bool
}

// NewLoader returns a loader of plugins in dir (egret.plugin.directory); an
// empty dir allows built-ins only. log gets the loader's and the plugins'
// logs; nil discards them.
func NewLoader(dir string, log *zap.Logger) *Loader {
	if log == nil {
		log = zap.NewNop()
	}
	return &Loader{dir: dir, log: log, parentDeathSignal: true, running: map[*Process]struct{}{}}
}

// Dir returns the plugin directory.
func (l *Loader) Dir() string { return l.dir }

// BinaryPath returns where the loader looks for the plugin binary of kind
// and name.
func (l *Loader) BinaryPath(kind, name string) string {
	return filepath.Join(l.dir, BinaryName(kind, name))
}

// LoadStateManager returns the state manager named name, configured with
// cfg. For a plugin, the session is the plugin process's: Close ends it and
// stops the process.
func (l *Loader) LoadStateManager(ctx context.Context, name string, cfg spi.Config) (spi.StateManager, error) {
	if f, err := spi.LookupStateManager(name); err == nil {
		return f(cfg, l.log.Named(spi.KindStateManager).With(zap.String("backend", name)))
	}
	return startPlugin[*stateManagerClient](ctx, l, spi.KindStateManager, name, cfg, spi.StateManagerNames())
}

// LoadUploader returns the uploader named name, configured with cfg. For a
// plugin, Close stops the process.
func (l *Loader) LoadUploader(ctx context.Context, name string, cfg spi.Config) (spi.Uploader, error) {
	if f, err := spi.LookupUploader(name); err == nil {
		return f(cfg, l.log.Named(spi.KindUploader).With(zap.String("backend", name)))
	}
	return startPlugin[*uploaderClient](ctx, l, spi.KindUploader, name, cfg, spi.UploaderNames())
}

// LoadPacking returns the packing algorithm named name, configured with
// cfg, and the closer that releases it: spi.Packing has no Close, so the
// closer is what stops a plugin process. The algorithm implements
// spi.Repacking when the built-in or the plugin does.
func (l *Loader) LoadPacking(ctx context.Context, name string, cfg spi.Config) (spi.Packing, io.Closer, error) {
	if f, err := spi.LookupPacking(name); err == nil {
		p, err := f(cfg)
		if err != nil {
			return nil, nil, err
		}
		if c, ok := p.(io.Closer); ok {
			return p, c, nil
		}
		return p, nopCloser{}, nil
	}
	c, err := startPlugin[*packingClient](ctx, l, spi.KindPacking, name, cfg, spi.PackingNames())
	if err != nil {
		return nil, nil, err
	}
	return c.typed(), c, nil
}

// LoadScheduler returns the scheduler named name, configured with cfg. A
// plugin's scheduler implements spi.Launcher and spi.Scalable exactly when
// the plugin's implementation does. For a plugin, Close stops the process
// (not the topology).
func (l *Loader) LoadScheduler(ctx context.Context, name string, cfg spi.Config) (spi.Scheduler, error) {
	if f, err := spi.LookupScheduler(name); err == nil {
		return f(cfg, l.log.Named(spi.KindScheduler).With(zap.String("backend", name)))
	}
	c, err := startPlugin[*schedulerClient](ctx, l, spi.KindScheduler, name, cfg, spi.SchedulerNames())
	if err != nil {
		return nil, err
	}
	return c.typed(), nil
}

// LoadMetricsSink returns the metrics sink named name, configured with
// cfg. For a plugin, Close stops the process.
func (l *Loader) LoadMetricsSink(ctx context.Context, name string, cfg spi.Config) (spi.MetricsSink, error) {
	if f, err := spi.LookupMetricsSink(name); err == nil {
		return f(cfg, l.log.Named(spi.KindMetricsSink).With(zap.String("backend", name)))
	}
	return startPlugin[*metricsSinkClient](ctx, l, spi.KindMetricsSink, name, cfg, spi.MetricsSinkNames())
}

// LoadCheckpointStorage returns the checkpoint storage named name,
// configured with cfg. For a plugin, Close stops the process.
func (l *Loader) LoadCheckpointStorage(ctx context.Context, name string, cfg spi.Config) (spi.CheckpointStorage, error) {
	if f, err := spi.LookupCheckpointStorage(name); err == nil {
		return f(cfg, l.log.Named(spi.KindCheckpointStorage).With(zap.String("backend", name)))
	}
	return startPlugin[*checkpointStorageClient](ctx, l, spi.KindCheckpointStorage, name, cfg, spi.CheckpointStorageNames())
}

// startPlugin finds and starts the plugin binary of kind and name (not a
// built-in), takes its adapter and configures it with cfg; on an error the
// process is killed.
func startPlugin[C adapter](ctx context.Context, l *Loader, kind, name string, cfg spi.Config, builtins []string) (C, error) {
	var zero C
	proc, rpc, err := l.start(ctx, kind, name, builtins)
	if err != nil {
		return zero, err
	}
	c, err := configured[C](ctx, rpc, kind, proc, name, cfg)
	if err != nil {
		proc.Kill()
		return zero, l.startErr(proc, err)
	}
	return c, nil
}

// LoadBinary starts the plugin binary at path as a backend of kind named
// name, whatever the plugin directory holds and even when name is built in,
// and configures it with cfg. It returns the backend (a spi.StateManager,
// spi.Uploader, spi.Packing, spi.Scheduler, spi.MetricsSink or spi.CheckpointStorage, as for the Load methods) and
// the closer that stops the process. `egret plugin verify` uses it.
func (l *Loader) LoadBinary(ctx context.Context, kind, path, name string, cfg spi.Config) (any, io.Closer, error) {
	if !slices.Contains(spi.Kinds, kind) {
		return nil, nil, fmt.Errorf("unknown plugin kind %q (kinds: %v)", kind, spi.Kinds)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("plugin binary %s: %w", path, err)
	case fi.IsDir():
		return nil, nil, fmt.Errorf("plugin binary %s is a directory", path)
	case fi.Mode().Perm()&0o111 == 0:
		return nil, nil, fmt.Errorf("plugin binary %s is not executable (chmod +x %s)", path, path)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	proc, rpc, err := l.startPath(ctx, kind, name, path, false)
	if err != nil {
		return nil, nil, err
	}
	var v any
	var closer io.Closer
	switch kind {
	case spi.KindStateManager:
		var c *stateManagerClient
		c, err = configured[*stateManagerClient](ctx, rpc, kind, proc, name, cfg)
		v, closer = c, c
	case spi.KindUploader:
		var c *uploaderClient
		c, err = configured[*uploaderClient](ctx, rpc, kind, proc, name, cfg)
		v, closer = c, c
	case spi.KindPacking:
		var c *packingClient
		if c, err = configured[*packingClient](ctx, rpc, kind, proc, name, cfg); err == nil {
			v = c.typed()
		}
		closer = c
	case spi.KindScheduler:
		var c *schedulerClient
		if c, err = configured[*schedulerClient](ctx, rpc, kind, proc, name, cfg); err == nil {
			v = c.typed()
		}
		closer = c
	case spi.KindMetricsSink:
		var c *metricsSinkClient
		c, err = configured[*metricsSinkClient](ctx, rpc, kind, proc, name, cfg)
		v, closer = c, c
	case spi.KindCheckpointStorage:
		var c *checkpointStorageClient
		c, err = configured[*checkpointStorageClient](ctx, rpc, kind, proc, name, cfg)
		v, closer = c, c
	}
	if err != nil {
		proc.Kill()
		return nil, nil, l.startErr(proc, err)
	}
	return v, closer, nil
}

// Close stops every plugin process the loader started that is still
// running. Values backed by them fail with spi.ErrPluginExited afterwards.
// Later loads fail.
func (l *Loader) Close() error {
	l.mu.Lock()
	l.closed = true
	procs := make([]*Process, 0, len(l.running))
	for p := range l.running {
		procs = append(procs, p)
	}
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Kill()
		}()
	}
	wg.Wait()
	return nil
}

// startErr adds the plugin's identity to an error of its first calls.
func (l *Loader) startErr(proc *Process, err error) error {
	if errors.Is(err, spi.ErrPluginExited) {
		return err
	}
	return fmt.Errorf("%s plugin %q (%s): %w", proc.Kind, proc.Name, proc.Path, err)
}

// Find checks that the backend of kind (spi.KindScheduler, ...) named name
// exists without starting anything: it returns "" for a built-in, else the
// path of its plugin binary, which must be an executable file. An error
// says what to do; a backend that is neither built in nor a plugin binary
// wraps spi.ErrUnknownBackend.
func (l *Loader) Find(kind, name string) (string, error) {
	if !slices.Contains(spi.Kinds, kind) {
		return "", fmt.Errorf("unknown plugin kind %q (kinds: %v)", kind, spi.Kinds)
	}
	builtins := spi.BackendNames(kind)
	if slices.Contains(builtins, name) {
		return "", nil
	}
	return l.binary(kind, name, builtins)
}

// binary returns the path of the plugin binary of kind and name, checked
// to be an executable file.
func (l *Loader) binary(kind, name string, builtins []string) (string, error) {
	what := spi.KindNoun(kind)
	// The metrics manager's own sinks are not registered with spi.
	builtIn := fmt.Sprintf(" (built in: %v)", builtins)
	if len(builtins) == 0 {
		builtIn = ""
	}
	if !validName.MatchString(name) {
		return "", fmt.Errorf("%s name %q is invalid: use letters, digits, '.', '_' and '-'%s: %w", what, name, builtIn, spi.ErrUnknownBackend)
	}
	if l.dir == "" {
		return "", fmt.Errorf("%s %q is not built in%s and no plugin directory is configured (set egret.plugin.directory to the directory holding %s): %w",
			what, name, builtIn, BinaryName(kind, name), spi.ErrUnknownBackend)
	}
	path := l.BinaryPath(kind, name)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("%s %q is not built in%s and there is no plugin binary %s: %w (install the plugin there, or set egret.plugin.directory to its directory)",
			what, name, builtIn, path, spi.ErrUnknownBackend)
	case err != nil:
		return "", fmt.Errorf("%s %q: plugin binary %s: %w", what, name, path, err)
	case fi.IsDir():
		return "", fmt.Errorf("%s %q: plugin binary %s is a directory", what, name, path)
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%s %q: plugin binary %s is not executable (chmod +x %s)", what, name, path, path)
	}
	return path, nil
}

// start finds and starts the plugin binary of kind and name and completes
// the handshake.
func (l *Loader) start(ctx context.Context, kind, name string, builtins []string) (*Process, plugin.ClientProtocol, error) {
	path, err := l.binary(kind, name, builtins)
	if err != nil {
		return nil, nil, err
	}
	return l.startPath(ctx, kind, name, path, false)
}

// startPath starts the plugin binary at path as the backend of kind named
// name and completes the handshake. A probe (Kind) does not know the kind
// yet: its errors do not name one.
func (l *Loader) startPath(ctx context.Context, kind, name, path string, probe bool) (*Process, plugin.ClientProtocol, error) {
	what := spi.KindNoun(kind)
	label := kind + " "
	if probe {
		label = ""
	}
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil, nil, fmt.Errorf("%s %q: the plugin loader is closed", what, name)
	}

	log := l.log.Named("plugin").With(zap.String("kind", kind), zap.String("backend", name))
	// The plugin's Unix socket goes into a directory of its own that Kill
	// removes: a plugin that is killed cannot remove its socket itself.
	sockDir, err := os.MkdirTemp("", "egret-plugin-")
	if err != nil {
		return nil, nil, fmt.Errorf("start %s plugin %s: %w", kind, path, err)
	}
	cmd := exec.Command(path)
	cmd.Env = append([]string{EnvLogLevel + "=" + zapLevelName(log), plugin.EnvUnixSocketDir + "=" + sockDir}, l.env...)
	if l.parentDeathSignal {
		setParentDeathSignal(cmd)
	}
	timeout := DefaultStartTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = max(time.Until(d), time.Millisecond)
	}
	set, _ := PluginSet(kind)
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          set,
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     timeout,
		Logger:           NewHCLogger(log),
		SyncStdout:       &lineWriter{log: func(s string) { log.Info(s, zap.String("stream", "stdout")) }},
		SyncStderr:       &lineWriter{log: func(s string) { log.Info(s, zap.String("stream", "stderr")) }},
	})
	proc := &Process{Kind: kind, Name: name, Path: path, client: pc, sockDir: sockDir}
	proc.forget = func() {
		l.mu.Lock()
		delete(l.running, proc)
		l.mu.Unlock()
	}
	l.mu.Lock()
	l.running[proc] = struct{}{}
	l.mu.Unlock()

	type result struct {
		rpc plugin.ClientProtocol
		err error
	}
	done := make(chan result, 1)
	go func() {
		rpc, err := pc.Client()
		done <- result{rpc, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		proc.Kill()
		<-done
		return nil, nil, fmt.Errorf("start %splugin %s: no handshake before the deadline (does it hang? is it an Egret plugin?): %w", label, path, ctx.Err())
	}
	if r.err != nil {
		proc.Kill()
		return nil, nil, fmt.Errorf("start %splugin %s: %w (is it an Egret %splugin built for protocol version %d? run it with %s=debug and read the log)",
			label, path, oneLineErr{r.err}, label, ProtocolVersion, EnvLogLevel)
	}
	if rc := pc.ReattachConfig(); rc != nil {
		proc.Pid = rc.Pid
	}
	log.Debug("plugin started", zap.String("path", path), zap.Int("pid", proc.Pid))
	return proc, r.rpc, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// oneLineErr keeps the first part of go-plugin's start errors on one line:
// they add a multi-line list of usual causes after "This usually means".
type oneLineErr struct{ err error }

func (e oneLineErr) Error() string {
	msg, _, _ := strings.Cut(e.err.Error(), "\nThis usually means")
	return strings.Join(strings.Fields(msg), " ")
}

func (e oneLineErr) Unwrap() error { return e.err }
