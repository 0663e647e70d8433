package launcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret"
	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/packing/render"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/uploaders/fetch"
)

// Names of the files in a topology package.
const (
	PackageBinary     = "topology"
	PackageDefinition = "topology.defn"
	PackageConfig     = "cluster.json"
)

// inputError marks an error caused by what the user gave (a missing
// binary, a binary that defines no or an invalid topology) without changing
// its message.
type inputError struct{ error }

func (e inputError) Unwrap() error { return e.error }

func badInput(err error) error { return inputError{err} }

// IsBadInput reports whether err was caused by the user's input.
func IsBadInput(err error) bool {
	var ie inputError
	return errors.As(err, &ie)
}

// Version is recorded in the execution state of submitted topologies.
var Version = "dev"

// Launcher runs topology operations against one cluster.
type Launcher struct {
	// Cluster is the loaded cluster config (not yet resolved for a
	// topology; the launcher does that).
	Cluster  *conf.Cluster
	Backends Backends
	Log      *zap.Logger
	// Progress receives one line per step of long operations (may be nil).
	Progress io.Writer
	// LockTimeout bounds how long submit, kill and update wait for another
	// command changing the same topology (DefaultLockTimeout when 0).
	LockTimeout time.Duration
}

func (l *Launcher) progress(format string, args ...any) {
	if l.Progress != nil {
		fmt.Fprintf(l.Progress, format+"\n", args...)
	}
}

// SubmitOptions describe a submission.
type SubmitOptions struct {
	// Binary is a topology binary, or a Go package (a directory or an
	// import path) that submit builds for the cluster's OS and
	// architecture.
	Binary string
	// Args are passed to the topology binary when it defines the topology.
	Args []string
	// DeployDeactivated starts the topology with its spouts deactivated.
	DeployDeactivated bool
	// DryRun packs the topology and renders the plan without touching the
	// cluster; DryRunFormat is "table" (default) or "json".
	DryRun       bool
	DryRunFormat string
	DryRunOut    io.Writer
	// WaitRunning bounds how long submit waits for the physical plan
	// (0: do not wait).
	WaitRunning time.Duration
	// Resources is a directory shipped in the package as resources/, the
	// working directory of shell components (optional).
	Resources string
}

// SubmitResult describes a submitted topology.
type SubmitResult struct {
	Topology   string
	TopologyID string
	Plan       *plan.PackingPlan
	PackageURI string
}

// Submit defines, packs, uploads, records and launches a topology. A
// failure after the upload undoes what was done.
func (l *Launcher) Submit(ctx context.Context, o SubmitOptions) (*SubmitResult, error) {
	var resources map[string]string
	if o.Resources != "" {
		var err error
		if resources, err = resourceFiles(o.Resources); err != nil {
			return nil, err
		}
	}
	tmp, err := os.MkdirTemp("", "egret-submit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	binary, err := l.binary(ctx, o.Binary, tmp)
	if err != nil {
		return nil, err
	}
	l.progress("defining topology from %s", o.Binary)
	t, defn, err := define(ctx, binary, o.Args, tmp)
	if err != nil {
		return nil, err
	}
	if m := t.DeliveryMode(); m == topology.EffectivelyOnce {
		return nil, badInput(fmt.Errorf("topology %q asks for %s delivery, which is not built yet; use at-least-once (replayable spouts, idempotent sinks) or at-most-once", t.Name, m))
	}
	cluster, err := l.Cluster.WithTopology(t.Name)
	if err != nil {
		return nil, err
	}
	cfg := cluster.Config()
	t.ID = t.Name + "-" + randomSuffix()

	l.progress("packing %d components into containers (%s)", len(t.Components), cfg.String("egret.packing", ""))
	packer, err := l.Backends.Packing(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("packing: %w", err)
	}
	pp, err := packer.Pack(t)
	if err != nil {
		return nil, fmt.Errorf("pack topology %q: %w", t.Name, err)
	}
	pp.TopologyID = t.ID
	if err := pp.Validate(t); err != nil {
		return nil, err
	}
	format := o.DryRunFormat
	if format == "" {
		format = "table"
	}
	nativeDryRun := o.DryRun && format != "table" && format != "json"
	if o.DryRun && !nativeDryRun {
		return &SubmitResult{Topology: t.Name, TopologyID: t.ID, Plan: pp}, render.Render(pp, o.dryRunOut(), format)
	}

	var store *state.Store
	unlock := func() {}
	if !nativeDryRun {
		sm, err := l.Backends.StateManager(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("state manager: %w", err)
		}
		defer sm.Close()
		store = state.New(sm)
		// The lock decides between concurrent submits (and kills and
		// updates) of the name before anything shared is written: a
		// loser finds the winner's state and uploads nothing.
		if unlock, err = l.lock(ctx, store, t.Name); err != nil {
			return nil, err
		}
		defer func() { unlock() }()
		if err := requireAbsent(ctx, store, t.Name, cluster.Name); err != nil {
			return nil, err
		}
	}

	l.progress("uploading the topology package (%s)", cfg.String("egret.uploader", ""))
	pkg := filepath.Join(tmp, t.Name+".tar.gz")
	cfgFile := filepath.Join(tmp, PackageConfig)
	if err := writeConfig(cfgFile, cfg); err != nil {
		return nil, err
	}
	files := map[string]string{PackageBinary: binary, PackageDefinition: defn, PackageConfig: cfgFile}
	for name, src := range resources {
		files[name] = src
	}
	sha, err := fetch.CreateTarGz(pkg, files)
	if err != nil {
		return nil, fmt.Errorf("build the topology package: %w", err)
	}
	up, err := l.Backends.Uploader(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("uploader: %w", err)
	}
	defer up.Close()
	uri, err := up.Upload(ctx, spi.Package{Topology: t.Name, Role: cluster.Role, Cluster: cluster.Name, Path: pkg, SHA256: sha})
	if err != nil {
		return nil, fmt.Errorf("upload the topology package: %w", err)
	}
	undoUpload := func() {
		if err := up.Undo(context.WithoutCancel(ctx), uri); err != nil {
			l.Log.Warn("could not remove the uploaded package", zap.String("uri", uri), zap.Error(err))
		}
	}
	job := spi.Job{Topology: t.Name, TopologyID: t.ID, Cluster: cluster.Name, Role: cluster.Role, Environ: cluster.Environ,
		PackageURI: uri, PackageSHA256: sha, Plan: pp, Config: cfg}
	if nativeDryRun {
		// The job names the uploaded package, which stays for the user to
		// run the job by hand; nothing else is written.
		return &SubmitResult{Topology: t.Name, TopologyID: t.ID, Plan: pp, PackageURI: uri}, l.renderJob(ctx, cfg, job, format, o.dryRunOut())
	}

	l.progress("writing topology state (%s)", cfg.String("egret.statemgr", ""))
	es := &egretpb.ExecutionState{
		TopologyName: t.Name, TopologyId: t.ID, Cluster: cluster.Name, Role: cluster.Role, Environ: cluster.Environ,
		SubmitTimeUnix: time.Now().Unix(), SubmitUser: currentUser(), PackageUri: uri, PackageSha256: sha,
		EgretVersion: Version, Scheduler: cfg.String("egret.scheduler", ""), DeployDeactivated: o.DeployDeactivated,
	}
	if err := store.Submit(ctx, state.Submission{Topology: t, Plan: pp, ExecutionState: es}); err != nil {
		// Create-if-absent is the last word should the lock have been
		// lost (an expired session): the package may be the winner's.
		if other, oerr := store.ExecutionState(context.WithoutCancel(ctx), t.Name); oerr != nil || other.GetPackageUri() != uri {
			undoUpload()
		}
		return nil, err
	}

	l.progress("launching %d containers (%s)", len(pp.Containers)+1, cfg.String("egret.scheduler", ""))
	if err := l.launch(ctx, cfg, job); err != nil {
		if kerr := store.Kill(context.WithoutCancel(ctx), t.Name); kerr != nil {
			l.Log.Warn("could not remove the state of the failed submission", zap.Error(kerr))
		}
		undoUpload()
		return nil, fmt.Errorf("launch topology %q: %w", t.Name, err)
	}
	res := &SubmitResult{Topology: t.Name, TopologyID: t.ID, Plan: pp, PackageURI: uri}
	if o.WaitRunning > 0 {
		unlock() // waiting changes nothing: let kill and update in
		if err := waitPlan(ctx, store, t.Name, 0, o.WaitRunning); err != nil {
			return res, err
		}
		l.progress("topology %q is running (id %s)", t.Name, t.ID)
	}
	return res, nil
}

// requireAbsent fails when the name has any state: a running topology, or
// what a failed submit or kill left (which kill removes).
func requireAbsent(ctx context.Context, store *state.Store, name, cluster string) error {
	present, err := store.Present(ctx, name)
	if err != nil {
		return err
	}
	if len(present) == 0 {
		return nil
	}
	if _, err := store.Topology(ctx, name); err == nil {
		return fmt.Errorf("topology %q is already running on cluster %s (kill it first, or choose another name): %w", name, cluster, spi.ErrExists)
	}
	return fmt.Errorf("topology %q has damaged or partial state on cluster %s (%s); egret kill %s %s removes it: %w",
		name, cluster, strings.Join(present, ", "), cluster, name, spi.ErrExists)
}

func (o SubmitOptions) dryRunOut() io.Writer {
	if o.DryRunOut == nil {
		return os.Stdout
	}
	return o.DryRunOut
}

// renderJob writes the scheduler's own job for a --dry-run-format of
// "<scheduler>-json" (for example nomad-json).
func (l *Launcher) renderJob(ctx context.Context, cfg spi.Config, job spi.Job, format string, out io.Writer) error {
	name := cfg.String("egret.scheduler", "")
	if format != name+"-json" {
		return badInput(fmt.Errorf("--dry-run-format %q: use table, json or %s-json", format, name))
	}
	sched, err := l.Backends.Scheduler(ctx, cfg)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	defer sched.Close()
	r, ok := sched.(spi.JobRenderer)
	if !ok {
		return badInput(fmt.Errorf("--dry-run-format %s: the %s scheduler cannot show its job", format, name))
	}
	b, err := r.RenderJob(job)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
}

func (l *Launcher) launch(ctx context.Context, cfg spi.Config, job spi.Job) error {
	sched, err := l.Backends.Scheduler(ctx, cfg)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	defer sched.Close()
	if ln, ok := sched.(spi.Launcher); ok {
		return ln.Launch(ctx, job)
	}
	return sched.Schedule(ctx, job)
}

// binary returns the topology binary to package: path itself when it is
// an executable file, else the result of building path as a Go package.
func (l *Launcher) binary(ctx context.Context, path, tmp string) (string, error) {
	if path == "" {
		return "", badInput(errors.New("no topology binary given"))
	}
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		if st.Mode()&0o111 == 0 {
			return "", badInput(fmt.Errorf("topology binary %s is not executable", path))
		}
		return filepath.Abs(path)
	}
	if !looksLikeGoPackage(path) {
		return "", badInput(fmt.Errorf("topology binary %s does not exist (give a built binary or a Go package such as ./examples/wordcount)", path))
	}
	cfg := l.Cluster.Config()
	goos := cfg.String("egret.package.goos", runtime.GOOS)
	goarch := cfg.String("egret.package.goarch", runtime.GOARCH)
	l.progress("building %s for %s/%s", path, goos, goarch)
	out := filepath.Join(tmp, "topology-bin")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, path)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", badInput(fmt.Errorf("build topology package %s: %v\n%s", path, err, strings.TrimSpace(string(b))))
	}
	return out, nil
}

func looksLikeGoPackage(path string) bool {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		matches, _ := filepath.Glob(filepath.Join(path, "*.go"))
		return len(matches) > 0
	}
	return !strings.HasPrefix(path, ".") && !filepath.IsAbs(path) && strings.Contains(path, ".") && strings.Contains(path, "/")
}

// define runs the topology binary in define mode and reads the definition.
func define(ctx context.Context, binary string, args []string, tmp string) (*topology.Topology, string, error) {
	defn := filepath.Join(tmp, PackageDefinition)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), egret.DefineEnv+"="+defn)
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		return nil, "", badInput(fmt.Errorf("topology binary %s failed to define its topology (%v):\n%s", binary, err, msg))
	}
	b, err := os.ReadFile(defn)
	if err != nil {
		return nil, "", badInput(fmt.Errorf("topology binary %s wrote no definition: is it built with egret.Run? (%w)", binary, err))
	}
	t, err := topology.Unmarshal(b)
	if err != nil {
		return nil, "", badInput(err)
	}
	if err := topology.Validate(t); err != nil {
		return nil, "", badInput(err)
	}
	return t, defn, nil
}

func writeConfig(path string, cfg spi.Config) error {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// ReadConfig reads a cluster config written into a topology package.
func ReadConfig(path string) (spi.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg spi.Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s is not a cluster config: %w", path, err)
	}
	return cfg, nil
}

func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}
