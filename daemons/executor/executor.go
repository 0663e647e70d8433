package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/executor/internal/cgroup"
	"github.com/egret-stream/egret/internal/fetch"
)

// retryDelay is how long the executor waits before re-reading the packing
// plan after a failed read or a closed watch.
const retryDelay = time.Second

// Executor runs and supervises the processes of one container.
type Executor struct {
	cfg    Config
	log    *zap.Logger
	paths  Paths
	params Params
	set    settings

	runOnce sync.Once

	mu    sync.Mutex
	procs map[string]*process

	// cg holds the children's cgroups (nil: Go limits only).
	cg  *cgroup.Manager
	exc exceptions

	// Owned by the Run goroutine.
	lastPlan *plan.PackingPlan
	inPlan   bool
	// eo: the topology checkpoints (a plan change restarts the stream
	// manager).
	eo bool
	// perContainer: topology.container.mode is process-per-container
	// (read once, at the start of a container 1..N).
	perContainer bool
}

// Run is New followed by Executor.Run.
func Run(ctx context.Context, cfg Config, log *zap.Logger) error {
	e, err := New(cfg, log)
	if err != nil {
		return err
	}
	return e.Run(ctx)
}

// New checks cfg and computes the container's paths; nothing is started
// before Run.
func New(cfg Config, log *zap.Logger) (*Executor, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.TopologyName == "" {
		return nil, errors.New("executor: a topology name is required (--topology)")
	}
	if err := names.Check(names.Topology, cfg.TopologyName); err != nil {
		return nil, fmt.Errorf("executor: --topology: %w", err)
	}
	if cfg.Container < 0 {
		return nil, fmt.Errorf("executor: container id %d is negative (--container)", cfg.Container)
	}
	if cfg.StateManager == nil && cfg.Connect == nil {
		return nil, errors.New("executor: neither a state manager session nor a way to connect one is configured")
	}
	paths, err := ComputePaths(cfg.WorkDir, cfg.ConfigFile)
	if err != nil {
		return nil, err
	}
	if cfg.EgretBinary, err = resolveBinary(cfg.EgretBinary); err != nil {
		return nil, err
	}
	e := &Executor{
		cfg:   cfg,
		log:   log.With(zap.String("topology", cfg.TopologyName), zap.Int("container", cfg.Container)),
		paths: paths,
		procs: map[string]*process{},
	}
	e.params = Params{
		Egret: cfg.EgretBinary, TopologyName: cfg.TopologyName, TopologyID: cfg.TopologyID,
		Container: cfg.Container, StmgrPort: cfg.StmgrPort, Paths: paths,
	}
	return e, nil
}

// resolveBinary makes the egret binary's path absolute (children run in
// the working directory) and checks that it exists.
func resolveBinary(bin string) (string, error) {
	var err error
	switch {
	case bin == "":
		bin, err = os.Executable()
	case filepath.IsAbs(bin):
	case strings.ContainsRune(bin, filepath.Separator):
		bin, err = filepath.Abs(bin)
	default:
		bin, err = exec.LookPath(bin)
	}
	if err != nil {
		return "", fmt.Errorf("executor: locate the egret binary: %w", err)
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		return "", fmt.Errorf("executor: egret binary %s is not a file (pass the path of the egret binary): %v", bin, err)
	}
	return bin, nil
}

// Paths returns the container's paths.
func (e *Executor) Paths() Paths { return e.paths }

// Run fetches the package, starts the container's processes and supervises
// them until ctx ends (then it stops every child and returns nil) or the
// container leaves the packing plan (the topology was killed or scaled
// down: it stops everything and returns nil). Run may be called once.
func (e *Executor) Run(ctx context.Context) error {
	err := errors.New("executor: Run called twice")
	e.runOnce.Do(func() { err = e.run(ctx) })
	return err
}

func (e *Executor) run(ctx context.Context) error {
	cfg, paths := e.cfg, e.paths
	for _, dir := range []string{paths.WorkDir, paths.LogsDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("executor: create %s: %w", dir, err)
		}
	}
	fopts, err := fetch.OptionsFromConfig(cfg.Settings, e.log)
	if err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	// The state manager is reached with the cluster config of a package:
	// the one extracted already (a restarted container), else the one on
	// the command line.
	prepared := false
	if !isDir(paths.PackageDir) || readMarker(paths.PackageDir+".sha256") == "" {
		if err := preparePackage(ctx, paths, cfg.PackageURI, cfg.PackageSHA256, fopts, e.log); err != nil {
			return fmt.Errorf("executor: %w", err)
		}
		prepared = true
	}
	cluster, err := e.clusterConfig()
	if err != nil && !prepared {
		if err := preparePackage(ctx, paths, cfg.PackageURI, cfg.PackageSHA256, fopts, e.log); err != nil {
			return fmt.Errorf("executor: %w", err)
		}
		prepared = true
		cluster, err = e.clusterConfig()
	}
	if err != nil {
		return err
	}
	sm := cfg.StateManager
	if sm == nil {
		if sm, err = cfg.Connect(ctx, cluster); err != nil {
			return fmt.Errorf("executor: connect to the state manager: %w", err)
		}
		defer sm.Close()
	}
	store := state.New(sm)
	// egret upgrade may have given this container another package than
	// the one on its command line.
	uri, sha, err := e.packageOf(ctx, store)
	if err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	if !prepared || uri != cfg.PackageURI || sha != cfg.PackageSHA256 {
		if err := preparePackage(ctx, paths, uri, sha, fopts, e.log); err != nil {
			return fmt.Errorf("executor: %w", err)
		}
		if cluster, err = e.clusterConfig(); err != nil {
			return err
		}
	}
	if cfg.Container > 0 {
		if fi, err := os.Stat(paths.TopologyBinary); err != nil || fi.IsDir() {
			return fmt.Errorf("executor: the package has no topology binary at %s (was it built by egret submit?)", paths.TopologyBinary)
		}
	}
	if e.set, err = parseSettings(cluster); err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	if paths.SocketDir != "" {
		if err := os.MkdirAll(paths.SocketDir, 0o700); err != nil {
			return fmt.Errorf("executor: create socket directory: %w", err)
		}
		defer os.RemoveAll(paths.SocketDir)
	}
	e.setupCgroups()
	if e.cg != nil {
		defer func() {
			if err := e.cg.Close(); err != nil {
				e.log.Warn("cannot remove every cgroup", zap.Error(err))
			}
		}()
	}

	e.mu.Lock()
	e.writePidsLocked()
	e.mu.Unlock()
	defer e.stopAll()

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	monitorDone := make(chan struct{})
	go func() {
		defer close(monitorDone)
		e.monitor(wctx)
	}()
	// Runs before stopAll: the monitor stops before the children.
	defer func() {
		cancel()
		<-monitorDone
	}()
	// Watch before the first read so no change is missed.
	events, err := store.Watch(wctx, state.PackingPlansDir, cfg.TopologyName)
	if err != nil {
		return fmt.Errorf("executor: watch the packing plan: %w", err)
	}
	if cfg.Container == 0 {
		e.startProcess("tmanager", KindTManager, 0, TManagerArgs(e.params))
		if e.healthMgrEnabled(ctx, store) {
			e.startProcess("healthmgr", KindHealthMgr, 0, HealthMgrArgs(e.params))
		}
	}
	if cfg.Container > 0 && e.containerMode(ctx, store) == topology.ProcessPerContainer {
		e.perContainer = true
		mirrorDone := make(chan struct{})
		go func() {
			defer close(mirrorDone)
			e.mirrorTManager(wctx, sm, paths.TManagerLocation)
		}()
		defer func() {
			cancel()
			<-mirrorDone
		}()
	}
	e.startProcess("metricsmgr", KindMetricsMgr, 0, MetricsMgrArgs(e.params))
	e.startProcess("shell", KindShell, 0, ShellArgs(e.params))
	done, err := e.reconcile(ctx, store, true)
	if err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	if done {
		return nil
	}
	e.log.Info("executor running", zap.String("work_dir", paths.WorkDir))
	if cfg.Ready != nil {
		cfg.Ready()
	}
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			e.log.Info("executor stopping")
			return nil
		case _, ok := <-events:
			if !ok {
				events = nil
				retry = time.After(retryDelay)
				continue
			}
		case <-retry:
			retry = nil
			if events == nil {
				if events, err = store.Watch(wctx, state.PackingPlansDir, cfg.TopologyName); err != nil {
					e.log.Warn("cannot watch the packing plan; retrying", zap.Error(err))
					events = nil
					retry = time.After(retryDelay)
					continue
				}
			}
		}
		done, err := e.reconcile(ctx, store, false)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			e.log.Warn("cannot apply the packing plan; retrying", zap.Error(err))
			retry = time.After(retryDelay)
			continue
		}
		if done {
			return nil
		}
	}
}

// effectivelyOnce reports whether the topology checkpoints (its
// containers then run a checkpoint manager).
func (e *Executor) effectivelyOnce(ctx context.Context, store *state.Store) (bool, error) {
	t, err := store.Topology(ctx, e.cfg.TopologyName)
	if errors.Is(err, spi.ErrNotFound) {
		// Submit writes the definition before the packing plan; without
		// one there is nothing to checkpoint (the stream manager reports
		// any checkpoint it cannot store).
		e.log.Warn("no topology definition in the state manager; starting no checkpoint manager")
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the topology definition: %w", err)
	}
	return t.DeliveryMode() == topology.EffectivelyOnce, nil
}

// healthMgrEnabled reports whether the topology runs a health manager
// (topology.healthmgr.enabled). An unreadable definition runs none: the
// topology manager reports the same problem.
func (e *Executor) healthMgrEnabled(ctx context.Context, store *state.Store) bool {
	t, err := store.Topology(ctx, e.cfg.TopologyName)
	if err != nil {
		e.log.Warn("cannot read the topology definition; starting no health manager", zap.Error(err))
		return false
	}
	return t.HealthMgr().Enabled
}

// reconcile reads the packing plan and makes the container's processes
// match it. done reports that the container has nothing to run any more.
func (e *Executor) reconcile(ctx context.Context, store *state.Store, first bool) (done bool, err error) {
	name := e.cfg.TopologyName
	p, _, err := store.PackingPlan(ctx, name)
	if errors.Is(err, spi.ErrNotFound) {
		if first {
			return false, fmt.Errorf("no packing plan for topology %q (is it submitted? submit writes the plan before starting containers): %w", name, err)
		}
		e.log.Info("the packing plan was deleted (topology killed); stopping")
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the packing plan: %w", err)
	}
	if id := e.cfg.TopologyID; id != "" && p.TopologyID != "" && p.TopologyID != id {
		msg := fmt.Sprintf("the packing plan of %q belongs to topology id %q, this executor to %q (the topology was resubmitted)", name, p.TopologyID, id)
		if first {
			return false, errors.New(msg)
		}
		e.log.Info(msg + "; stopping")
		return true, nil
	}
	if e.cfg.Container == 0 {
		e.lastPlan = p
		return false, nil
	}
	var mine *plan.Container
	for i := range p.Containers {
		if p.Containers[i].ID == e.cfg.Container {
			mine = &p.Containers[i]
			break
		}
	}
	changed := e.lastPlan != nil && !reflect.DeepEqual(e.lastPlan, p)
	e.lastPlan = p
	if mine == nil {
		if e.inPlan {
			e.log.Info("this container is no longer in the packing plan; stopping")
			return true, nil
		}
		e.log.Info("this container is not in the packing plan yet; waiting for it")
		return false, nil
	}
	wasIn := e.inPlan
	e.inPlan = true

	want := map[string]plan.Instance{}
	for _, in := range mine.Instances {
		// The name becomes a process and log file name: a plan (read
		// from the state manager) with an invalid one is not applied.
		if err := names.Check(names.Component, in.Component); err != nil {
			return false, fmt.Errorf("the packing plan of %q is corrupt: task %d: %w", name, in.TaskID, err)
		}
		want[InstanceName(in.Component, in.TaskID)] = in
	}
	if !wasIn {
		eo, err := e.effectivelyOnce(ctx, store)
		if err != nil {
			e.inPlan = false
			return false, err
		}
		e.eo = eo
		if eo {
			e.startProcess("ckptmgr", KindCkptMgr, 0, CkptMgrArgs(e.params))
		}
	}
	if e.perContainer {
		e.reconcileContainer(mine, changed)
		return false, nil
	}
	var gone []*process
	e.mu.Lock()
	for n, pr := range e.procs {
		if _, ok := want[n]; pr.kind == KindInstance && !ok {
			gone = append(gone, pr)
		}
	}
	e.mu.Unlock()
	if len(gone) > 0 {
		e.log.Info("stopping instances no longer in this container", zap.Int("count", len(gone)))
		e.stopProcesses(gone)
	}
	switch {
	case !wasIn:
		e.startProcess("stmgr", KindStmgr, 0, StmgrArgs(e.params, e.eo))
	case changed && e.eo:
		// Effectively-once: the restarted stream manager makes the
		// topology manager roll back to the last checkpoint with the new
		// task set.
		e.mu.Lock()
		st := e.procs["stmgr"]
		e.mu.Unlock()
		if st != nil {
			e.log.Info("packing plan changed; restarting the stream manager so it re-registers")
			st.requestRestart("packing plan changed")
		}
	case changed:
		e.log.Info("packing plan changed; the stream manager and the unchanged instances follow the new physical plan without a restart")
	}
	ins := make([]plan.Instance, 0, len(want))
	for _, in := range want {
		ins = append(ins, in)
	}
	sort.Slice(ins, func(i, j int) bool { return ins[i].TaskID < ins[j].TaskID })
	for _, in := range ins {
		n := InstanceName(in.Component, in.TaskID)
		e.mu.Lock()
		_, running := e.procs[n]
		e.mu.Unlock()
		if !running {
			e.startInstance(n, in)
		}
	}
	return false, nil
}

// InstanceName is the process (and log file) name of a task's instance.
func InstanceName(component string, task int) string {
	return "instance-" + component + "-" + strconv.Itoa(task)
}

func (e *Executor) startProcess(name string, kind Kind, task int, args []string) {
	p := newProcess(e, name, kind, task, args)
	p.dir = e.paths.WorkDir
	e.launch(p, cgroup.Limits{})
}

// startInstance starts the instance of in with the limits of its share of
// the packing plan, in its own working directory W/instances/<name>.
func (e *Executor) startInstance(name string, in plan.Instance) {
	p := newProcess(e, name, KindInstance, in.TaskID, InstanceArgs(e.params, in.TaskID, e.eo))
	p.component = in.Component
	p.limits = instanceLimits(in.Resources, e.set.maxProcs)
	p.dir = filepath.Join(e.paths.InstancesDir, name)
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		e.log.Warn("cannot create the instance's working directory; it runs in the container's",
			zap.String("process", name), zap.Error(err))
		p.dir = e.paths.WorkDir
	}
	e.launch(p, p.limits.cgroupLimits())
}

// launch puts p in its cgroup (when the executor has cgroups) and starts
// its supervision.
func (e *Executor) launch(p *process, l cgroup.Limits) {
	if e.cg != nil {
		g, err := e.cg.Create(p.name, l)
		if err != nil {
			e.log.Warn("cannot create the process's cgroup; only its Go limits apply", zap.String("process", p.name), zap.Error(err))
		}
		p.group = g
	}
	e.mu.Lock()
	e.procs[p.name] = p
	e.mu.Unlock()
	go p.run()
}

// stopProcesses stops ps in parallel and forgets them.
func (e *Executor) stopProcesses(ps []*process) {
	for _, p := range ps {
		p.requestStop()
	}
	for _, p := range ps {
		<-p.done
	}
	e.mu.Lock()
	for _, p := range ps {
		if e.procs[p.name] == p {
			delete(e.procs, p.name)
		}
	}
	e.writePidsLocked()
	e.mu.Unlock()
	for _, p := range ps {
		if p.group != nil {
			if err := p.group.Remove(); err != nil {
				e.log.Warn("cannot remove the process's cgroup", zap.String("process", p.name), zap.Error(err))
			}
		}
	}
}

// setupCgroups gives the children their own cgroups where the executor
// may create them, and says once why not otherwise.
func (e *Executor) setupCgroups() {
	const fallback = "enforcing only GOMAXPROCS, GOMEMLIMIT and the executor's RSS watchdog (docs/isolation.md)"
	if e.set.cgroups == CgroupsOff {
		e.log.Info("resource isolation: cgroups are off (" + KeyCgroups + "); " + fallback)
		e.addException("", 0, "executor of container "+strconv.Itoa(e.cfg.Container)+": cgroups are off ("+KeyCgroups+"); "+fallback)
		return
	}
	prefix := "egret-" + e.cfg.TopologyName + "-" + strconv.Itoa(e.cfg.Container) + "-"
	// The pid finds the groups of a dead executor; the random part
	// separates executors of one process (tests).
	var r [4]byte
	_, _ = rand.Read(r[:])
	name := prefix + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(r[:])
	m, err := cgroup.Setup(cgroup.Options{Name: name, StalePrefix: prefix})
	if err != nil {
		e.log.Warn("resource isolation: cannot create cgroups; "+fallback, zap.Error(err))
		e.addException("", 0, "executor of container "+strconv.Itoa(e.cfg.Container)+": cannot create cgroups ("+err.Error()+"); "+fallback)
		return
	}
	e.cg = m
	e.log.Info("resource isolation: every process in its own cgroup", zap.String("cgroup", string(m.Version())), zap.String("path", m.Path()))
}

// stopAll stops every child: SIGTERM to all at once, SIGKILL to those still
// alive after the grace period.
func (e *Executor) stopAll() {
	e.mu.Lock()
	ps := make([]*process, 0, len(e.procs))
	for _, p := range e.procs {
		ps = append(ps, p)
	}
	e.mu.Unlock()
	e.stopProcesses(ps)
	e.log.Info("all processes stopped")
}

// Status returns a snapshot of every child, sorted by name.
func (e *Executor) Status() []ProcessStatus {
	e.mu.Lock()
	out := make([]ProcessStatus, 0, len(e.procs))
	for _, p := range e.procs {
		out = append(out, p.statusLocked())
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Restarts returns how often the named process was restarted (0 if there
// is no such process).
func (e *Executor) Restarts(name string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.procs[name]; p != nil {
		return p.restarts
	}
	return 0
}

// writePidsLocked rewrites W/pids.json atomically; the caller holds e.mu.
func (e *Executor) writePidsLocked() {
	pf := PidFile{Executor: os.Getpid(), Processes: map[string]int{}}
	for n, p := range e.procs {
		if p.pid > 0 {
			pf.Processes[n] = p.pid
		}
		pf.Status = append(pf.Status, p.statusLocked())
	}
	sort.Slice(pf.Status, func(i, j int) bool { return pf.Status[i].Name < pf.Status[j].Name })
	b, err := json.MarshalIndent(pf, "", "  ")
	if err == nil {
		err = writeFileAtomic(e.paths.PidsFile, append(b, '\n'), 0o644)
	}
	if err != nil {
		e.log.Warn("cannot write the pid file", zap.String("path", e.paths.PidsFile), zap.Error(err))
	}
}
