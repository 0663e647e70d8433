package launcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/plan/render"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/internal/fetch"
	"github.com/egret-stream/egret/proto/egretpb"
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
	// Egret is the egret binary topology packages carry with
	// egret.package.core.bundle; empty: this executable.
	Egret string
	// BuildProgressEvery is how often submit says that the build of a
	// topology package is still running (default 10s).
	BuildProgressEvery time.Duration
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
	// DefineTimeout bounds how long the topology binary may take to define
	// the topology (0: DefaultDefineTimeout).
	DefineTimeout time.Duration
	// DeployDeactivated starts the topology with its spouts deactivated.
	DeployDeactivated bool
	// DryRun defines and packs the topology and renders the result without
	// side effects: no file outside a temporary directory, no state, no
	// package, no request to a state manager, package server or resource
	// manager. DryRunFormat is "table" (default) or "json" for the packing
	// plan, or "<scheduler>-json" (kubernetes-yaml: spi.JobFormatter) or
	// "<scheduler>" for the scheduler's own job (spi.JobRenderer), which
	// names the URI the package would be uploaded to (spi.URIPreviewer) or
	// else spi.DryRunPackageURI.
	DryRun       bool
	DryRunFormat string
	DryRunOut    io.Writer
	// WaitRunning bounds how long submit waits for the physical plan
	// (0: do not wait).
	WaitRunning time.Duration
	// Resources is a directory shipped in the package as resources/, the
	// working directory of shell components (optional).
	Resources string
	// FromSavepoint, when set, starts the topology from a savepoint: it
	// is checked against the topology before anything is written, then
	// copied into the cluster's checkpoint storage and recorded as the
	// topology's last complete checkpoint with its state.
	FromSavepoint SavepointRestorer
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
	format, err := l.dryRunFormat(o)
	if err != nil {
		return nil, err
	}
	var resources map[string]string
	if o.Resources != "" {
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
	t, defn, err := define(ctx, binary, o.Args, tmp, o.DefineTimeout)
	if err != nil {
		return nil, err
	}
	cluster, err := l.Cluster.WithTopology(t.Name)
	if err != nil {
		return nil, err
	}
	cfg := cluster.Config()
	t.ID = t.Name + "-" + randomSuffix()
	var renderer spi.JobRenderer
	if o.DryRun && format != "table" && format != "json" {
		sched, err := l.jobRenderer(ctx, cfg, format)
		if err != nil {
			return nil, err
		}
		defer sched.Close()
		renderer = sched.(spi.JobRenderer)
	}

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
	if err := checkFromSavepoint(o, t, pp); err != nil {
		return nil, err
	}
	res := &SubmitResult{Topology: t.Name, TopologyID: t.ID, Plan: pp}
	if o.DryRun && (format == "table" || format == "json") {
		return res, render.Render(pp, o.dryRunOut(), format)
	}

	var store *state.Store
	unlock := func() {}
	if !o.DryRun {
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

	pkg := spi.Package{Topology: t.Name, Role: cluster.Role, Cluster: cluster.Name, Path: filepath.Join(tmp, t.Name+".tar.gz")}
	extra := maps.Clone(resources)
	if extra == nil {
		extra = map[string]string{}
	}
	if err := l.bundleEgret(cfg, extra); err != nil {
		return nil, err
	}
	if pkg.SHA256, err = buildPackage(pkg.Path, cfg, binary, defn, extra); err != nil {
		return nil, err
	}
	binarySHA, err := FileSHA256(binary)
	if err != nil {
		return nil, err
	}
	up, err := l.Backends.Uploader(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("uploader: %w", err)
	}
	defer up.Close()
	job := spi.Job{Topology: t.Name, TopologyID: t.ID, Cluster: cluster.Name, Role: cluster.Role, Environ: cluster.Environ,
		PackageSHA256: pkg.SHA256, Plan: pp, Config: cfg}
	if o.DryRun {
		if job.PackageURI, err = l.previewURI(ctx, cfg, up, pkg); err != nil {
			return nil, err
		}
		res.PackageURI = job.PackageURI
		b, err := renderer.RenderJob(job)
		if err != nil {
			return nil, err
		}
		_, err = fmt.Fprintf(o.dryRunOut(), "%s\n", b)
		return res, err
	}

	l.progress("uploading the topology package (%s)", cfg.String("egret.uploader", ""))
	uri, err := up.Upload(ctx, pkg)
	if err != nil {
		return nil, fmt.Errorf("upload the topology package: %w", err)
	}
	undoUpload := func() {
		if err := up.Undo(context.WithoutCancel(ctx), uri); err != nil {
			l.Log.Warn("could not remove the uploaded package", zap.String("uri", uri), zap.Error(err))
		}
	}
	job.PackageURI, res.PackageURI = uri, uri

	l.progress("writing topology state (%s)", cfg.String("egret.statemgr", ""))
	es := &egretpb.ExecutionState{
		TopologyName: t.Name, TopologyId: t.ID, Cluster: cluster.Name, Role: cluster.Role, Environ: cluster.Environ,
		SubmitTimeUnix: time.Now().Unix(), SubmitUser: currentUser(), PackageUri: uri, PackageSha256: pkg.SHA256, PackageBinarySha256: binarySHA,
		EgretVersion: Version, Scheduler: cfg.String("egret.scheduler", ""), DeployDeactivated: o.DeployDeactivated,
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("generate the topology secret: %w", err)
	}
	sub := state.Submission{Topology: t, Plan: pp, ExecutionState: es, Secret: secret}
	if o.FromSavepoint != nil {
		l.progress("copying the savepoint into the checkpoint storage (%s)", cfg.String("egret.checkpoint.storage", "localfs"))
		id, tasks, undo, err := o.FromSavepoint.Seed(ctx, cfg, t, pp)
		if err != nil {
			undoUpload()
			return nil, fmt.Errorf("start %q from the savepoint: %w", t.Name, err)
		}
		sub.Checkpoint = &egretpb.CheckpointState{TopologyName: t.Name, TopologyId: t.ID, LastCompleteId: id, Tasks: componentTasks(tasks)}
		prev := undoUpload
		undoUpload = func() { undo(); prev() }
	}
	if err := store.Submit(ctx, sub); err != nil {
		// Create-if-absent is the last word should the lock have been
		// lost (an expired session): the package may be the winner's.
		if other, oerr := store.ExecutionState(context.WithoutCancel(ctx), t.Name); oerr != nil || other.GetPackageUri() != uri {
			undoUpload()
		}
		return nil, err
	}

	l.progress("launching %d containers (%s): container 0 runs the topology manager, %s", len(pp.Containers)+1,
		cfg.String("egret.scheduler", ""), plural(len(pp.Containers), "container of the packing plan runs", "containers of the packing plan run")+" the instances")
	if err := l.launch(ctx, cfg, job); err != nil {
		if kerr := store.Kill(context.WithoutCancel(ctx), t.Name); kerr != nil {
			l.Log.Warn("could not remove the state of the failed submission", zap.Error(kerr))
		}
		undoUpload()
		return nil, fmt.Errorf("launch topology %q: %w", t.Name, err)
	}
	if o.WaitRunning > 0 {
		unlock() // waiting changes nothing: let kill and update in
		if err := waitPlan(ctx, store, t.Name, 0, o.WaitRunning); err != nil {
			return res, l.explainWait(ctx, cfg, cluster.Name, t.Name, err)
		}
		if o.DeployDeactivated {
			l.progress("topology %q is deployed, deactivated (id %s): egret activate starts its spouts", t.Name, t.ID)
		} else {
			l.progress("topology %q is running (id %s)", t.Name, t.ID)
		}
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

// dryRunFormat checks o.DryRunFormat before anything runs: table, json or
// the cluster's scheduler's "<scheduler>-json", "<scheduler>-yaml" or
// "<scheduler>" (all print the scheduler's own job; jobRenderer then
// checks the one the scheduler renders).
func (l *Launcher) dryRunFormat(o SubmitOptions) (string, error) {
	format := o.DryRunFormat
	if format == "" {
		format = "table"
	}
	if !o.DryRun {
		return format, nil
	}
	sched := l.Cluster.Config().String("egret.scheduler", "")
	if format != "table" && format != "json" && format != sched+"-json" && format != sched+"-yaml" && format != sched {
		return "", badInput(fmt.Errorf("--dry-run-format %q: use table, json or the %s scheduler's own job (%s, or its format %s-json or %s-yaml, whichever it renders; cluster %s runs the %s scheduler)", format, sched, sched, sched, sched, l.Cluster.Name, sched))
	}
	return format, nil
}

// buildPackage writes the topology package (binary, definition, cluster
// config) to path and returns its SHA-256.
func buildPackage(path string, cfg spi.Config, binary, defn string, resources map[string]string) (string, error) {
	cfgFile := filepath.Join(filepath.Dir(path), PackageConfig)
	if err := writeConfig(cfgFile, cfg); err != nil {
		return "", err
	}
	files := map[string]string{PackageBinary: binary, PackageDefinition: defn, PackageConfig: cfgFile}
	for name, src := range resources {
		files[name] = src
	}
	sha, err := fetch.CreateTarGz(path, files)
	if err != nil {
		return "", fmt.Errorf("build the topology package: %w", err)
	}
	return sha, nil
}

// previewURI returns the URI the uploader would store pkg at, without
// uploading it, or spi.DryRunPackageURI when the uploader cannot tell.
func (l *Launcher) previewURI(ctx context.Context, cfg spi.Config, up spi.Uploader, pkg spi.Package) (string, error) {
	name := cfg.String("egret.uploader", "")
	p, ok := up.(spi.URIPreviewer)
	if !ok {
		l.progress("dry run: the package is not uploaded; the %s uploader cannot tell its URI, the job names %s", name, spi.DryRunPackageURI)
		return spi.DryRunPackageURI, nil
	}
	uri, err := p.PreviewURI(ctx, pkg)
	if err != nil {
		return "", fmt.Errorf("the URI of the topology package (%s uploader): %w", name, err)
	}
	l.progress("dry run: the package is not uploaded; the job names the URI the %s uploader would store it at", name)
	return uri, nil
}

// jobRenderer returns the scheduler for a --dry-run-format of
// "<scheduler>-json" (or the format its spi.JobFormatter names, such as
// kubernetes-yaml) or "<scheduler>" (for example nomad-json, aurora) when
// it can show its job (spi.JobRenderer).
func (l *Launcher) jobRenderer(ctx context.Context, cfg spi.Config, format string) (spi.Scheduler, error) {
	sched, err := l.Backends.Scheduler(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	name := cfg.String("egret.scheduler", "")
	if _, ok := sched.(spi.JobRenderer); !ok {
		_ = sched.Close()
		return nil, badInput(fmt.Errorf("--dry-run-format %s: the %s scheduler cannot show its job; use table or json", format, name))
	}
	// The scheduler's own name, or the one format its job is in:
	// <scheduler>-json unless it says otherwise (spi.JobFormatter).
	own := name + "-json"
	if f, ok := sched.(spi.JobFormatter); ok {
		own = f.JobFormat()
	}
	if format != name && format != own {
		_ = sched.Close()
		return nil, badInput(fmt.Errorf("--dry-run-format %s: the %s scheduler shows its job as %s; use %s, %s, table or json", format, name, own, own, name))
	}
	return sched, nil
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
	st, statErr := os.Stat(path)
	switch {
	case statErr == nil && st.Mode().IsRegular():
		if st.Mode()&0o111 == 0 {
			return "", badInput(fmt.Errorf("topology binary %s is not executable (chmod +x it, or give its Go package)", path))
		}
		return filepath.Abs(path)
	case statErr == nil && st.IsDir():
		if matches, _ := filepath.Glob(filepath.Join(path, "*.go")); len(matches) == 0 {
			return "", badInput(fmt.Errorf("%s is a directory without Go files: give a topology binary or the directory of a topology's main package (such as ./examples/wordcount)", path))
		}
	case statErr == nil:
		return "", badInput(fmt.Errorf("%s is neither a topology binary nor a Go package directory (it is a %s)", path, st.Mode().Type()))
	case !looksLikeImportPath(path):
		return "", badInput(fmt.Errorf("topology binary %s does not exist (give a built binary or a Go package such as ./examples/wordcount)", path))
	}
	cfg := l.Cluster.Config()
	goos := cfg.String("egret.package.goos", runtime.GOOS)
	goarch := cfg.String("egret.package.goarch", runtime.GOARCH)
	l.progress("building %s for %s/%s", path, goos, goarch)
	out, err := filepath.Abs(filepath.Join(tmp, "topology-bin"))
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, path)
	if statErr == nil {
		// A directory is built from inside it, so that it builds in its
		// own module (a user's module elsewhere, not the one of the
		// current directory).
		cmd = exec.CommandContext(ctx, "go", "build", "-o", out, ".")
		cmd.Dir = path
	}
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	start := time.Now()
	stop := l.tellWhile(func(d time.Duration) {
		l.progress("still building %s: %s so far (a first build compiles every dependency; later ones are cached)", path, d.Round(100*time.Millisecond))
	})
	b, err := cmd.CombinedOutput()
	stop()
	if err != nil {
		return "", buildFailure(path, goos, goarch, err, string(b))
	}
	l.progress("built %s in %s", path, time.Since(start).Round(100*time.Millisecond))
	return out, nil
}

// tellWhile calls tell with the time elapsed every BuildProgressEvery
// until the returned stop is called.
func (l *Launcher) tellWhile(tell func(time.Duration)) (stop func()) {
	every := l.BuildProgressEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				tell(time.Since(start))
			}
		}
	}()
	return func() { close(done); <-finished }
}

// buildFailure describes a failed go build in one line: the first error
// of the compiler's output, with a hint to see the rest.
func buildFailure(path, goos, goarch string, err error, out string) error {
	var first string
	n := 0
	for _, l := range nonEmptyLines(out) {
		if strings.HasPrefix(l, "#") { // "# package" headers
			continue
		}
		if first == "" {
			first = l
		}
		n++
	}
	if first == "" {
		first = err.Error()
	}
	msg := fmt.Errorf("build topology package %s for %s/%s: %s", path, goos, goarch, first)
	if n > 1 {
		return badInput(withHint(msg, "go build %s shows all %d lines of the compiler's output", path, n))
	}
	return badInput(msg)
}

// looksLikeImportPath reports whether path, which is not a file, may be a
// Go import path such as github.com/you/topology.
func looksLikeImportPath(path string) bool {
	return !strings.HasPrefix(path, ".") && !filepath.IsAbs(path) && strings.Contains(path, ".") && strings.Contains(path, "/")
}

func writeConfig(path string, cfg spi.Config) error {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
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

// plural is "1 one" or "n many".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
