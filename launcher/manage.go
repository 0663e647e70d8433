package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

// session opens the state manager of the cluster resolved for a topology.
func (l *Launcher) session(ctx context.Context, name string) (spi.Config, *state.Store, func(), error) {
	cluster, err := l.Cluster.WithTopology(name)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg := cluster.Config()
	sm, err := l.Backends.StateManager(ctx, cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("state manager: %w", err)
	}
	return cfg, state.New(sm), func() { _ = sm.Close() }, nil
}

// ErrNotRunning is returned for operations on a topology that is not
// submitted.
var ErrNotRunning = errors.New("topology is not running")

// DefaultLockTimeout is how long a command waits for another command that
// changes the same topology (Launcher.LockTimeout).
const DefaultLockTimeout = 3 * time.Minute

// lockedSession is session followed by lock: the topology's cluster
// config and state, held under the topology's lock until release.
func (l *Launcher) lockedSession(ctx context.Context, name string) (spi.Config, *state.Store, func(), error) {
	cfg, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return nil, nil, nil, err
	}
	unlock, err := l.lock(ctx, store, name)
	if err != nil {
		closeSM()
		return nil, nil, nil, err
	}
	return cfg, store, func() { unlock(); closeSM() }, nil
}

// lock takes the topology's lock in the state manager, which serializes
// submit, kill and update of one topology across processes and hosts.
// The lock of a command that died goes with its state manager session.
func (l *Launcher) lock(ctx context.Context, store *state.Store, name string) (func(), error) {
	wait := l.LockTimeout
	if wait <= 0 {
		wait = DefaultLockTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	unlock, err := store.Lock(lctx, name)
	if err != nil {
		if errors.Is(err, spi.ErrLockHeld) && ctx.Err() == nil {
			return nil, fmt.Errorf("another egret command has been changing topology %q for %s; try again when it is done: %w", name, wait, err)
		}
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := unlock(); err != nil {
				l.Log.Warn("could not release the topology lock; it goes with the session", zap.String("topology", name), zap.Error(err))
			}
		})
	}, nil
}

// ErrNothingToKill is matched (errors.Is) by the error of a Kill that
// found nothing of the topology: no state, and no job the scheduler can
// tell of. It also matches spi.ErrNotFound.
var ErrNothingToKill = fmt.Errorf("nothing to kill: %w", spi.ErrNotFound)

// Kill stops a topology and removes its state and package. It succeeds for
// a topology only partly there, or whose state nodes are corrupt: kill is
// the way out of a damaged topology. A topology of which nothing is left
// (a misspelled name, a second kill) is an error matching
// ErrNothingToKill that names the nearest topology of the cluster; the
// scheduler is still asked to stop any container left of it when it
// cannot tell whether it runs one.
//
// It holds the topology's lock throughout, and removes the package before
// the state, so that a submit of the same name waiting for the lock never
// sees its freshly uploaded package (content-addressed, so possibly at the
// same URI) deleted by this kill.
func (l *Launcher) Kill(ctx context.Context, name string, o KillOptions) error {
	if err := checkTopology(name); err != nil {
		return err
	}
	cfg, store, release, err := l.lockedSession(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	present, err := store.Present(ctx, name)
	if err != nil {
		return err
	}
	_, tmErr := store.TManagerLocation(ctx, name)
	if tmErr == nil || errors.Is(tmErr, spi.ErrCorrupt) {
		present = append(present, "topology manager")
	}
	es, esErr := store.ExecutionState(ctx, name)
	sched, err := l.Backends.Scheduler(ctx, cfg)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	defer sched.Close()
	if len(present) == 0 {
		return l.killLeftovers(ctx, store, sched, name)
	}
	deactivated := false
	if o.DrainTimeout > 0 {
		deactivated = l.drain(ctx, store, name, o.DrainTimeout)
	}
	l.progress("stopping the containers of %q", name)
	if err := sched.Kill(ctx, name); err != nil {
		if deactivated {
			// The kill did not happen: leave the topology as it was.
			if aerr := l.activateAfterFailedKill(ctx, store, name); aerr != nil {
				return fmt.Errorf("kill the containers of %q: %w (and its spouts stay deactivated: %v; egret activate starts them)", name, err, aerr)
			}
		}
		return fmt.Errorf("kill the containers of %q: %w", name, err)
	}
	switch {
	case esErr == nil:
		// The submitted package and those of upgrades.
		for uri := range referencedURIs(es) {
			l.removePackage(ctx, cfg, uri)
		}
	case errors.Is(esErr, spi.ErrCorrupt):
		l.Log.Warn("the execution state is corrupt, so the topology package stays in the uploader's store", zap.Error(esErr))
	}
	l.removeCheckpoints(ctx, cfg, store, name)
	l.progress("removing the state of %q", name)
	return store.Kill(ctx, name)
}

// killLeftovers handles the kill of a topology without state: the
// containers a scheduler still runs of it are stopped (a kill interrupted
// after the state went), and otherwise the error says that nothing was
// there, with the nearest name.
func (l *Launcher) killLeftovers(ctx context.Context, store *state.Store, sched spi.Scheduler, name string) error {
	var known []string
	if names, err := store.Names(ctx); err == nil {
		known = names
	}
	missing := fmt.Sprintf("no topology %q in cluster %q", name, l.Cluster.Name)
	if near, ok := names.Nearest(name, known); ok {
		missing += fmt.Sprintf(" (did you mean %q?)", near)
	} else if len(known) > 0 && len(known) <= 10 {
		missing += fmt.Sprintf(" (it runs %s)", strings.Join(known, ", "))
	}
	if p, ok := sched.(spi.Prober); ok {
		err := p.Probe(ctx, name)
		if errors.Is(err, spi.ErrNotFound) {
			return fmt.Errorf("%s: nothing left to stop: %w", missing, ErrNothingToKill)
		}
		// The scheduler still has a job of it: stop its containers.
		l.progress("%q has no state left, but the scheduler still runs its job: stopping its containers", name)
		if err := sched.Kill(ctx, name); err != nil {
			return fmt.Errorf("kill the containers left of %q: %w", name, err)
		}
		return nil
	}
	// The scheduler cannot tell whether it runs containers of the
	// topology: it is asked to stop any, and the kill still says that
	// there was no topology.
	if err := sched.Kill(ctx, name); err != nil {
		return fmt.Errorf("%s; stopping any container left of it failed: %w", missing, err)
	}
	return fmt.Errorf("%s: nothing in its state manager (the scheduler was asked to stop any container left of it): %w", missing, ErrNothingToKill)
}

// removeCheckpoints deletes the checkpoints of a killed effectively-once
// topology from its checkpoint storage; a failure is logged (the kill
// happened) with where they stay.
func (l *Launcher) removeCheckpoints(ctx context.Context, cfg spi.Config, store *state.Store, name string) {
	t, err := store.Topology(ctx, name)
	if err != nil || t.DeliveryMode() != topology.EffectivelyOnce {
		return
	}
	b, ok := l.Backends.(CheckpointStorages)
	if !ok {
		return
	}
	ctx = context.WithoutCancel(ctx)
	st, err := b.CheckpointStorage(ctx, cfg)
	if err != nil {
		l.Log.Warn("could not remove the checkpoints of the killed topology", zap.String("topology", name), zap.Error(err))
		return
	}
	defer func() { _ = st.Close() }()
	ids, err := st.List(ctx, name)
	if err != nil {
		l.Log.Warn("could not list the checkpoints of the killed topology", zap.String("topology", name), zap.Error(err))
		return
	}
	if len(ids) > 0 {
		l.progress("removing %d checkpoint(s) of %q", len(ids), name)
	}
	for _, id := range ids {
		if err := st.Delete(ctx, name, id); err != nil {
			l.Log.Warn("could not remove a checkpoint of the killed topology", zap.String("topology", name), zap.Int64("checkpoint", id), zap.Error(err))
		}
	}
	// What writers killed with the topology left (temporary files of
	// uploads cut short), then the files the checkpoints consisted of
	// (spi.CheckpointFiles).
	if tr, ok := st.(spi.TempRemover); ok {
		if _, err := tr.RemoveTemps(ctx, name, time.Now().Add(time.Hour)); err != nil {
			l.Log.Warn("could not remove the temporary checkpoint files of the killed topology", zap.String("topology", name), zap.Error(err))
		}
	}
	files, ok := st.(spi.CheckpointFiles)
	if !ok {
		return
	}
	infos, err := files.ListFiles(ctx, name)
	if err != nil {
		l.Log.Warn("could not list the checkpoint files of the killed topology", zap.String("topology", name), zap.Error(err))
		return
	}
	for _, f := range infos {
		if err := files.DeleteFile(ctx, name, f.Name); err != nil {
			l.Log.Warn("could not remove a checkpoint file of the killed topology", zap.String("topology", name), zap.String("file", f.Name), zap.Error(err))
		}
	}
}

func (l *Launcher) removePackage(ctx context.Context, cfg spi.Config, uri string) {
	up, err := l.Backends.Uploader(ctx, cfg)
	if err != nil {
		l.Log.Warn("could not remove the topology package", zap.String("uri", uri), zap.Error(err))
		return
	}
	defer up.Close()
	if err := up.Undo(context.WithoutCancel(ctx), uri); err != nil {
		l.Log.Warn("could not remove the topology package", zap.String("uri", uri), zap.Error(err))
	}
}

// activateAfterFailedKill activates the spouts a drain deactivated.
func (l *Launcher) activateAfterFailedKill(ctx context.Context, store *state.Store, name string) error {
	loc, err := store.TManagerLocation(context.WithoutCancel(ctx), name)
	if err != nil {
		return err
	}
	return l.postTManager(context.WithoutCancel(ctx), loc, name, "/activate", nil)
}

// SetActive activates or deactivates a topology through its topology
// manager.
func (l *Launcher) SetActive(ctx context.Context, name string, active bool) error {
	if err := checkTopology(name); err != nil {
		return err
	}
	op := "deactivate"
	if active {
		op = "activate"
	}
	return l.tmanagerPost(ctx, name, "/"+op, nil)
}

// Deactivate deactivates a topology and then waits, at most drain, until
// nothing is in flight (as the drained kill does): when it returns after
// a drain that completed, every root the spouts emitted was acked or
// failed and every queue is empty. drain 0: return once the spouts are
// deactivated.
func (l *Launcher) Deactivate(ctx context.Context, name string, drain time.Duration) error {
	since := time.Now()
	if err := l.SetActive(ctx, name, false); err != nil {
		return err
	}
	if drain <= 0 {
		return nil
	}
	_, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return err
	}
	defer closeSM()
	loc, err := store.TManagerLocation(ctx, name)
	if err != nil {
		return fmt.Errorf("topology %q is deactivated, but its topology manager cannot be found to wait for the drain: %w", name, err)
	}
	l.settle(ctx, loc, name, drain, since)
	return nil
}

// SetRuntimeConfig sends runtime config values to the topology manager.
func (l *Launcher) SetRuntimeConfig(ctx context.Context, name string, kv map[string]string) error {
	if err := checkTopology(name); err != nil {
		return err
	}
	form := url.Values{}
	for k, v := range kv {
		form.Set(k, v)
	}
	return l.tmanagerPost(ctx, name, "/runtime-config", form)
}

func (l *Launcher) tmanagerPost(ctx context.Context, name, path string, form url.Values) error {
	_, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return err
	}
	defer closeSM()
	loc, err := l.tmanager(ctx, store, name)
	if err != nil {
		return err
	}
	return l.postTManager(ctx, loc, name, path, form)
}

// postTManager posts form to path of the topology manager at loc.
func (l *Launcher) postTManager(ctx context.Context, loc *egretpb.TManagerLocation, name, path string, form url.Values) error {
	u := fmt.Sprintf("http://%s:%d%s", loc.GetHost(), loc.GetHttpPort(), path)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("topology manager of %q at %s: %w", name, u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusConflict:
		return fmt.Errorf("topology manager of %q: %s: %w: %s", name, path, errNotReady, strings.TrimSpace(string(body)))
	}
	return fmt.Errorf("topology manager of %q: %s %s: %s", name, path, resp.Status, strings.TrimSpace(string(body)))
}

// errNotReady: the topology manager refuses a change until every stream
// manager of the plan has registered (HTTP 409).
var errNotReady = errors.New("not every stream manager has registered yet")

func requireRunning(ctx context.Context, store *state.Store, name string) error {
	if _, err := store.Topology(ctx, name); err != nil {
		if errors.Is(err, spi.ErrNotFound) {
			return fmt.Errorf("topology %q: %w", name, ErrNotRunning)
		}
		return killHint(name, err)
	}
	return nil
}

// killHint adds the way out to the error of a corrupt state node.
func killHint(name string, err error) error {
	if errors.Is(err, spi.ErrCorrupt) {
		return fmt.Errorf("%w; `egret kill` removes topology %q", err, name)
	}
	return err
}

// tmanager returns the location of a submitted topology's topology
// manager, or an error that says truthfully why there is none.
func (l *Launcher) tmanager(ctx context.Context, store *state.Store, name string) (*egretpb.TManagerLocation, error) {
	if err := requireRunning(ctx, store, name); err != nil {
		return nil, err
	}
	loc, err := store.TManagerLocation(ctx, name)
	if err == nil {
		return loc, nil
	}
	if !errors.Is(err, spi.ErrNotFound) {
		return nil, killHint(name, err)
	}
	if perr := l.probe(ctx, name); perr != nil {
		return nil, fmt.Errorf("topology %q is down: %w", name, perr)
	}
	if _, perr := store.PhysicalPlan(ctx, name); perr == nil {
		return nil, fmt.Errorf("topology %q is down: its topology manager (container 0) is not running; its executor restarts it, or `egret restart` restarts the containers", name)
	}
	return nil, fmt.Errorf("topology %q has no topology manager yet: its containers are starting (`egret list` shows when it runs)", name)
}

// probe asks the topology's scheduler, when it can tell, whether its side
// of the topology is healthy.
func (l *Launcher) probe(ctx context.Context, name string) error {
	cluster, err := l.Cluster.WithTopology(name)
	if err != nil {
		return err
	}
	sched, err := l.Backends.Scheduler(ctx, cluster.Config())
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	defer sched.Close()
	if p, ok := sched.(spi.Prober); ok {
		return p.Probe(ctx, name)
	}
	return nil
}

// Restart restarts one container of a topology, or all with
// spi.AllContainers.
func (l *Launcher) Restart(ctx context.Context, name string, container int) error {
	if err := checkTopology(name); err != nil {
		return err
	}
	if err := checkContainer(container); err != nil {
		return err
	}
	// A restart may start the scheduler's service again: not while a
	// kill or an update of the topology runs.
	cfg, store, release, err := l.lockedSession(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	if err := requireRunning(ctx, store, name); err != nil {
		return err
	}
	if container != spi.AllContainers {
		pp, _, err := store.PackingPlan(ctx, name)
		if err != nil {
			return killHint(name, err)
		}
		if _, ok := pp.Container(container); !ok && container != 0 {
			return fmt.Errorf("topology %q has no container %d (containers 0..%d)", name, container, len(pp.Containers))
		}
	}
	sched, err := l.Backends.Scheduler(ctx, cfg)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	defer sched.Close()
	return sched.Restart(ctx, name, container)
}

// UpdateOptions change a running topology.
type UpdateOptions struct {
	// Parallelism sets the task count of components.
	Parallelism map[string]int
	// Containers sets the number of containers (0: unchanged).
	Containers int
	// RuntimeConfig is sent to the topology manager.
	RuntimeConfig map[string]string
	// DrainTimeout bounds the drain of a running topology between its
	// deactivation and the restart of its instances (see Kill); 0: none.
	DrainTimeout time.Duration
	// Restart applies the fixed settings of RuntimeConfig (those the
	// instances and stream managers read when they start) by a rolling
	// restart of containers 1..N, drained and health-checked as an
	// upgrade's (see RestartConfig).
	Restart bool
}

// Update rescales a topology (repacking it and handing the new plan to the
// scheduler) and/or changes its runtime config.
//
// A rescale starts only the new instances and stops only the removed
// ones; the stream managers and the other instances follow the new
// physical plan without a restart (an effectively-once topology restarts
// its instances). When the change stops, moves or restarts instances, a
// running topology is deactivated and drained first and activated again
// once the new physical plan is in place, so that no tuple is in flight
// toward an instance that stops (with at-most-once delivery it would be
// lost); a rescale that only adds instances is applied while the
// topology runs.
//
// A rescale is all or nothing. Everything is checked before anything
// changes: the components and counts, the repacked plan, and the
// scheduler's health (spi.Prober). Then, holding the topology's lock, it
// deactivates, writes the new packing plan (the executors and the topology
// manager follow the packing plan in the state manager, so the plan comes
// before the scheduler starts containers for it), asks the scheduler to
// apply it, waits for the new physical plan and activates. On any failure
// it restores the previous packing plan, hands the previous plan to the
// scheduler again (which undoes a half-applied update) and reactivates a
// topology that was running; the error says what failed and whether the
// rollback was complete.
func (l *Launcher) Update(ctx context.Context, name string, o UpdateOptions) error {
	if err := checkTopology(name); err != nil {
		return err
	}
	if o.Restart {
		return l.restartConfig(ctx, name, o)
	}
	if err := topology.CheckRuntimeConfig(o.RuntimeConfig); err != nil {
		return badInput(err) // before anything is changed or sent
	}
	if len(o.Parallelism) > 0 || o.Containers > 0 {
		if err := l.rescale(ctx, name, o); err != nil {
			return err
		}
	}
	if len(o.RuntimeConfig) > 0 {
		l.progress("sending runtime config to the topology manager")
		return l.SetRuntimeConfig(ctx, name, o.RuntimeConfig)
	}
	return nil
}

// rescaling is one rescale in progress: what it read, what it plans, and
// the steps to undo.
type rescaling struct {
	name          string
	store         *state.Store
	sched         spi.Scheduler
	t, nextT      *topology.Topology
	current, next *plan.PackingPlan
	es            *egretpb.ExecutionState
	cfg           spi.Config
	wasRunning    bool
	// pause: the spouts are deactivated and the topology drained around
	// the change, because it stops or moves instances (or restarts them:
	// effectively-once, or containers the scheduler replaces).
	pause bool
	// replaced are the containers the scheduler replaces to apply the
	// change (spi.Replacer): every process in them restarts.
	replaced []int
	// tmanager is the topology manager's location before the change.
	tmanager        *egretpb.TManagerLocation
	drain           time.Duration
	physicalVersion uint64
	undo            []undoStep
	// rescaled are the components whose parallelism changes.
	rescaled []string
}

type undoStep struct {
	what string
	do   func(ctx context.Context) error
}

func (r *rescaling) job(p *plan.PackingPlan) spi.Job {
	return spi.Job{Topology: r.name, TopologyID: r.t.ID, Cluster: r.es.GetCluster(), Role: r.es.GetRole(), Environ: r.es.GetEnviron(),
		PackageURI: r.es.GetPackageUri(), PackageSHA256: r.es.GetPackageSha256(), Plan: p, Config: r.cfg}
}

func (l *Launcher) rescale(ctx context.Context, name string, o UpdateOptions) error {
	cfg, store, release, err := l.lockedSession(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	r, err := l.planRescale(ctx, cfg, store, name, o)
	if err != nil || r == nil {
		return err
	}
	defer r.sched.Close()
	if err := l.applyRescale(ctx, r); err != nil {
		return l.rollback(ctx, r, err)
	}
	return nil
}

// planRescale reads the topology and checks everything a rescale needs
// without changing anything. It returns nil when the plan does not change.
func (l *Launcher) planRescale(ctx context.Context, cfg spi.Config, store *state.Store, name string, o UpdateOptions) (*rescaling, error) {
	if err := requireRunning(ctx, store, name); err != nil {
		return nil, err
	}
	r := &rescaling{name: name, store: store, cfg: cfg, drain: o.DrainTimeout}
	var err error
	if r.t, err = store.Topology(ctx, name); err != nil {
		return nil, killHint(name, err)
	}
	// The lock keeps the plan from changing under us: the restore and the
	// new plan are written unconditionally.
	if r.current, _, err = store.PackingPlan(ctx, name); err != nil {
		return nil, killHint(name, err)
	}
	if r.es, err = store.ExecutionState(ctx, name); err != nil {
		return nil, killHint(name, err)
	}
	r.nextT = r.t.Clone()
	for _, comp := range sortedKeys(o.Parallelism) {
		n := o.Parallelism[comp]
		c, ok := r.nextT.Component(comp)
		if !ok {
			return nil, badInput(fmt.Errorf("topology %q has no component %q (components: %s)", name, comp, strings.Join(componentNames(r.t.Components), ", ")))
		}
		if n < 1 {
			return nil, badInput(fmt.Errorf("component %q: parallelism %d must be at least 1", comp, n))
		}
		if err := keygroup.Check(n, r.t.MaxParallelism(comp)); err != nil {
			return nil, badInput(fmt.Errorf("component %q: %w", comp, err))
		}
		if n != c.Parallelism {
			r.rescaled = append(r.rescaled, comp)
		}
		c.Parallelism = n
	}
	if err := l.checkStatefulRescale(ctx, r); err != nil {
		return nil, err
	}
	packer, err := l.Backends.Packing(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("packing: %w", err)
	}
	repacker, ok := packer.(spi.Repacking)
	if !ok {
		return nil, fmt.Errorf("packing algorithm %s cannot repack a running topology: %w", cfg.String("egret.packing", ""), spi.ErrUnsupported)
	}
	l.progress("repacking %q", name)
	if r.next, err = repacker.Repack(r.nextT, r.current, o.Parallelism, o.Containers); err != nil {
		return nil, fmt.Errorf("repack topology %q: %w", name, err)
	}
	r.next.TopologyID = r.current.TopologyID
	if err := r.next.Validate(r.nextT); err != nil {
		return nil, fmt.Errorf("the repacked plan of %q is invalid: %w", name, err)
	}
	if proto.Equal(r.next.ToProto(), r.current.ToProto()) {
		l.progress("the packing plan of %q does not change", name)
		return nil, nil
	}
	if r.sched, err = l.Backends.Scheduler(ctx, cfg); err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if p, ok := r.sched.(spi.Prober); ok {
		if err := p.Probe(ctx, name); err != nil {
			r.sched.Close()
			return nil, fmt.Errorf("cannot update topology %q: %w", name, err)
		}
	}
	if pp, err := store.PhysicalPlan(ctx, name); err == nil && pp.GetState() == egretpb.TopologyState_TOPOLOGY_STATE_RUNNING {
		r.wasRunning, r.physicalVersion = true, pp.GetVersion()
		r.tmanager, _ = store.TManagerLocation(ctx, name)
	}
	if rp, ok := r.sched.(spi.Replacer); ok {
		r.replaced = rp.ReplacedBy(r.current, r.next)
	}
	r.pause = r.wasRunning && (r.t.DeliveryMode() == topology.EffectivelyOnce || stopsInstances(r.current, r.next) || len(r.replaced) > 0 ||
		r.t.ContainerMode() == topology.ProcessPerContainer && addsToContainers(r.current, r.next))
	return r, nil
}

// checkStatefulRescale checks, before anything changes, that the state of
// the components whose parallelism changes can follow them, and says what
// happens to it. Effectively-once: the instances restart and roll back to
// the last complete checkpoint, whose tasks the topology manager recorded
// (egretpb.CheckpointState.tasks); every task of a rescaled component
// restores its key groups (keyed state and timers) from the old tasks that
// held them, and its share of their operator state by each state's
// restore mode; the spouts replay what followed the checkpoint. A
// checkpoint state that does not record its tasks is refused. Other
// delivery modes checkpoint nothing: keyed state lives only in the tasks'
// memory and does not follow the key groups that move.
func (l *Launcher) checkStatefulRescale(ctx context.Context, r *rescaling) error {
	if len(r.rescaled) == 0 {
		return nil
	}
	if r.t.DeliveryMode() != topology.EffectivelyOnce {
		l.progress("%q is %s: no state is checkpointed, so the in-memory state of %s does not follow the key groups that move (a task keeps what it holds, new tasks start empty); stateful rescaling needs %s",
			r.name, r.t.DeliveryMode(), strings.Join(r.rescaled, ", "), topology.EffectivelyOnce)
		return nil
	}
	st, err := r.store.CheckpointState(ctx, r.name)
	switch {
	case errors.Is(err, spi.ErrNotFound):
		l.progress("%q has no complete checkpoint yet: its rescaled tasks start with empty state and the spouts start over", r.name)
		return nil
	case err != nil:
		return fmt.Errorf("read the checkpoint state of %q: %w", r.name, err)
	case st.GetLastCompleteId() > 0 && len(st.GetTasks()) == 0:
		return fmt.Errorf("the last complete checkpoint of %q (%d) does not record its tasks (its topology manager predates stateful rescaling), so its state cannot be redistributed; restart the topology manager (egret restart CLUSTER %s 0) and retry once a checkpoint completed",
			r.name, st.GetLastCompleteId(), r.name)
	}
	l.progress("%s: every task of the new plan restores its key groups and operator state from checkpoint %d", strings.Join(r.rescaled, ", "), st.GetLastCompleteId())
	return nil
}

// stopsInstances reports whether going from current to next stops or
// moves an instance: a task of current that next drops or places in
// another container.
func stopsInstances(current, next *plan.PackingPlan) bool {
	was, is := current.Layout(), next.Layout()
	for task, c := range was.ContainerOf {
		if nc, ok := is.ContainerOf[task]; !ok || nc != c {
			return true
		}
	}
	return false
}

// addsToContainers reports whether next places a task in a container
// that current runs already: in process-per-container mode that
// container's process restarts with its new tasks.
func addsToContainers(current, next *plan.PackingPlan) bool {
	was, is := current.Layout(), next.Layout()
	running := map[int]bool{}
	for _, c := range was.ContainerOf {
		running[c] = true
	}
	for task, c := range is.ContainerOf {
		if _, ok := was.ContainerOf[task]; !ok && running[c] {
			return true
		}
	}
	return false
}

// applyRescale changes the topology step by step, recording how to undo
// each step before it is taken.
func (l *Launcher) applyRescale(ctx context.Context, r *rescaling) error {
	if r.wasRunning && !r.pause {
		l.progress("no instance of %q stops or moves: rescaling it while it runs", r.name)
	}
	if len(r.replaced) > 0 {
		what, in := "containers "+intList(r.replaced), "them"
		if len(r.replaced) == 1 {
			what, in = "container "+intList(r.replaced), "it"
		}
		l.progress("the scheduler replaces %s of %q to apply the new plan: every process in %s restarts", what, r.name, in)
	}
	if r.pause {
		l.progress("deactivating %q while it is rescaled", r.name)
		r.undo = append(r.undo, undoStep{"reactivate the topology", func(ctx context.Context) error {
			// The topology manager accepts activation once the stream
			// managers of the restored plan have registered.
			if err := waitPlan(ctx, r.store, r.name, 0, time.Minute); err != nil {
				return err
			}
			return retryConflict(ctx, func() error { return l.SetActive(ctx, r.name, true) })
		}})
		since := time.Now()
		if err := l.SetActive(ctx, r.name, false); err != nil {
			return fmt.Errorf("deactivate: %w", err)
		}
		if r.drain > 0 {
			// What is in flight is processed (and acked) before the
			// instances restart with the new plan.
			if loc, err := r.store.TManagerLocation(ctx, r.name); err == nil {
				l.settle(ctx, loc, r.name, r.drain, since)
			}
		}
	}
	l.progress("writing the new packing plan (%d containers)", len(r.next.Containers))
	if err := r.store.UpdatePackingPlan(ctx, r.nextT, r.next, spi.AnyVersion); err != nil {
		return fmt.Errorf("write the new packing plan: %w", err)
	}
	r.undo = append(r.undo, undoStep{fmt.Sprintf("restore the previous packing plan (containers 1..%d)", len(r.current.Containers)), func(ctx context.Context) error {
		return r.store.UpdatePackingPlan(ctx, r.t, r.current, spi.AnyVersion)
	}})
	l.progress("asking the scheduler to apply it")
	// A failed update may be half applied: the previous plan undoes it.
	r.undo = append(r.undo, undoStep{"hand the previous plan to the scheduler", func(ctx context.Context) error {
		return r.sched.Update(ctx, r.job(r.current))
	}})
	if err := r.sched.Update(ctx, r.job(r.next)); err != nil {
		return fmt.Errorf("the scheduler did not apply the new plan: %w", err)
	}
	if !r.wasRunning {
		return nil
	}
	if slices.Contains(r.replaced, 0) {
		// The old topology manager may have published a plan of the new
		// layout before it stopped: wait for its successor.
		l.progress("waiting for the new topology manager")
		if err := waitNewTManager(ctx, r.store, r.name, r.tmanager, 2*time.Minute); err != nil {
			return err
		}
	}
	l.progress("waiting for the new physical plan")
	if err := waitPlan(ctx, r.store, r.name, r.physicalVersion, time.Minute); err != nil {
		return err
	}
	if !r.pause {
		return nil
	}
	l.progress("activating %q", r.name)
	if err := retryConflict(ctx, func() error { return l.SetActive(ctx, r.name, true) }); err != nil {
		return fmt.Errorf("activate: %w", err)
	}
	return nil
}

// rollback undoes the steps of a failed rescale, newest first, and returns
// one error that says what failed and what the rollback did.
func (l *Launcher) rollback(ctx context.Context, r *rescaling, cause error) error {
	// Undo even when the user interrupted the update, within a bound.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer cancel()
	var done, failed []string
	for i := len(r.undo) - 1; i >= 0; i-- {
		u := r.undo[i]
		l.progress("rolling back: %s", u.what)
		if err := u.do(rctx); err != nil {
			failed = append(failed, fmt.Sprintf("could not %s: %v", u.what, err))
			continue
		}
		done = append(done, u.what)
	}
	switch {
	case len(r.undo) == 0:
		return fmt.Errorf("update of topology %q failed before anything changed: %w", r.name, cause)
	case len(failed) == 0:
		return fmt.Errorf("update of topology %q failed and was rolled back (%s): %w", r.name, strings.Join(done, ", "), cause)
	}
	return fmt.Errorf("update of topology %q failed and the rollback is incomplete (%s); check it with egret list and fix it with egret update or egret kill: %w", r.name, strings.Join(failed, "; "), cause)
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// waitPlan waits until the topology manager has written a physical plan
// newer than version for the topology's current packing plan.
func waitPlan(ctx context.Context, store *state.Store, name string, version uint64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	events, err := store.Watch(ctx, state.PhysicalPlansDir, name)
	if err != nil {
		return err
	}
	for {
		pp, _, err := store.PackingPlan(ctx, name)
		if err != nil {
			return err
		}
		if cur, err := store.PhysicalPlan(ctx, name); err == nil && cur.GetVersion() > version &&
			plan.FromProto(cur.GetPacking()).Layout().Fingerprint() == pp.Layout().Fingerprint() {
			return nil
		}
		select {
		case <-events:
		case <-ctx.Done():
			return fmt.Errorf("topology %q has no physical plan for its packing plan after %s: its containers may still be starting; see their logs: %w", name, timeout, ctx.Err())
		}
	}
}

// waitNewTManager waits until the location node names another topology
// manager than old (another process or address).
func waitNewTManager(ctx context.Context, store *state.Store, name string, old *egretpb.TManagerLocation, timeout time.Duration) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for {
		loc, err := store.TManagerLocation(ctx, name)
		if err == nil && (old == nil || loc.GetPid() != old.GetPid() || loc.GetHost() != old.GetHost() || loc.GetServerPort() != old.GetServerPort()) {
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline:
			return fmt.Errorf("topology %q has no new topology manager %s after its container 0 was replaced: see its logs", name, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// retryConflict retries op while the topology manager answers 409 (not
// every stream manager registered yet).
func retryConflict(ctx context.Context, op func() error) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		err := op()
		if !errors.Is(err, errNotReady) {
			return err
		}
		select {
		case <-tick.C:
		case <-deadline:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TopologyInfo is one row of List.
type TopologyInfo struct {
	Name    string `json:"name"`
	ID      string `json:"id"`
	Cluster string `json:"cluster"`
	Role    string `json:"role"`
	Environ string `json:"environ"`
	// State is running, deactivated, starting, down (it ran and its
	// topology manager is gone, or its scheduler is dead), corrupt (a
	// state node cannot be read) or partial (a state node is missing).
	State      string    `json:"state"`
	Containers int       `json:"containers"`
	Instances  int       `json:"instances"`
	Submitted  time.Time `json:"submitted"`
	User       string    `json:"user"`
	// Packages says which package (by SHA-256) each container runs; one
	// entry unless an upgrade is under way, stopped or a canary.
	Packages []PackageUse `json:"packages,omitempty"`
	// Problem says what is wrong, in one line, when something is.
	Problem string `json:"problem,omitempty"`
}

// List returns the topologies of the cluster: every name with state in
// the state manager, including those whose state is corrupt or partial,
// which are marked as such rather than failing the list.
func (l *Launcher) List(ctx context.Context) ([]TopologyInfo, error) {
	cfg := l.Cluster.Config()
	sm, err := l.Backends.StateManager(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("state manager: %w", err)
	}
	defer sm.Close()
	store := state.New(sm)
	names, err := store.Names(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]TopologyInfo, 0, len(names))
	for _, n := range names {
		info, err := l.inspect(ctx, store, n)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// inspect reads one topology's state and says truthfully how it is.
func (l *Launcher) inspect(ctx context.Context, store *state.Store, name string) (TopologyInfo, error) {
	info := TopologyInfo{Name: name}
	var broken, missing []string
	// note records a failed read: a missing or corrupt node is the
	// topology's problem; any other error (the state manager is
	// unreachable) fails the list.
	note := func(dir string, err error) error {
		switch {
		case err == nil:
		case errors.Is(err, spi.ErrNotFound):
			missing = append(missing, state.Path(dir, name))
		case errors.Is(err, spi.ErrCorrupt):
			broken = append(broken, err.Error())
		default:
			return err
		}
		return nil
	}
	_, err := store.Topology(ctx, name)
	if err := note(state.TopologiesDir, err); err != nil {
		return info, err
	}
	es, err := store.ExecutionState(ctx, name)
	esOK := err == nil
	if err == nil {
		info.ID, info.Cluster, info.Role, info.Environ = es.GetTopologyId(), es.GetCluster(), es.GetRole(), es.GetEnviron()
		info.Submitted, info.User = time.Unix(es.GetSubmitTimeUnix(), 0), es.GetSubmitUser()
	}
	if err := note(state.ExecutionStateDir, err); err != nil {
		return info, err
	}
	pp, _, err := store.PackingPlan(ctx, name)
	if err == nil {
		info.Containers = len(pp.Containers)
		for _, c := range pp.Containers {
			info.Instances += len(c.Instances)
		}
		if esOK {
			info.Packages = packageUses(es, containerIDs(pp))
		}
	}
	if err := note(state.PackingPlansDir, err); err != nil {
		return info, err
	}
	pplan, err := store.PhysicalPlan(ctx, name)
	if errors.Is(err, spi.ErrNotFound) {
		pplan, err = nil, nil
	}
	if err := note(state.PhysicalPlansDir, err); err != nil {
		return info, err
	}
	switch {
	case len(broken) > 0:
		info.State, info.Problem = "corrupt", fmt.Sprintf("%s; egret kill removes the topology", strings.Join(broken, "; "))
		return info, nil
	case len(missing) > 0:
		info.State, info.Problem = "partial", fmt.Sprintf("no %s (an interrupted submit or kill); egret kill removes the rest", strings.Join(missing, ", "))
		return info, nil
	}
	_, tmErr := store.TManagerLocation(ctx, name)
	switch {
	case errors.Is(tmErr, spi.ErrCorrupt):
		// Ephemeral: it goes with the topology manager's session.
		info.State, info.Problem = "down", tmErr.Error()
		return info, nil
	case tmErr != nil && !errors.Is(tmErr, spi.ErrNotFound):
		return info, tmErr
	}
	tmanager := tmErr == nil
	switch {
	case pplan == nil:
		info.State = "starting"
	case !tmanager:
		info.State, info.Problem = "down", "its topology manager (container 0) is not running"
	case pplan.GetState() == egretpb.TopologyState_TOPOLOGY_STATE_PAUSED:
		info.State = "deactivated"
	default:
		info.State = "running"
	}
	if err := l.probe(ctx, name); err != nil {
		info.Problem = err.Error()
		if !tmanager {
			info.State = "down"
		}
	}
	return info, nil
}

func componentNames(cs []topology.Component) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// ParseParallelism parses "component:n" (Heron's form) or "component=n"
// values of --component-parallelism.
func ParseParallelism(values []string) (map[string]int, error) {
	out := map[string]int{}
	for _, v := range values {
		i := strings.IndexAny(v, ":=")
		comp, num, ok := v, "", i >= 0
		if ok {
			comp, num = v[:i], v[i+1:]
		}
		n, err := strconv.Atoi(num)
		if !ok || comp == "" || err != nil {
			return nil, fmt.Errorf("--component-parallelism %q: want component:count (or component=count), for example count:4", v)
		}
		out[comp] = n
	}
	return out, nil
}

// ParseKeyValues parses "key=value" values of --runtime-config.
func ParseKeyValues(flag string, values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		k, val, ok := strings.Cut(v, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%s %q: want key=value", flag, v)
		}
		out[strings.TrimSpace(k)] = val
	}
	return out, nil
}

// Stats is the topology manager's aggregated view of a topology's metrics:
// the latest reported values summed per component.
type Stats struct {
	Topology   string                        `json:"topology"`
	Components map[string]map[string]float64 `json:"components"`
	// Executors are the container-level metrics of each container's
	// executor (executor.cgroups: 1 when its processes are in cgroups),
	// by container id.
	Executors map[string]map[string]float64 `json:"executors,omitempty"`
	// Checkpoints are the topology manager's checkpoint.* metrics
	// (effectively-once topologies only).
	Checkpoints map[string]float64 `json:"checkpoints,omitempty"`
	// HealthManager is what the health manager did (topologies that
	// enable it).
	HealthManager *HealthReport `json:"health_manager,omitempty"`
}

// Metrics reads the latest metrics of a running topology from its
// topology manager.
func (l *Launcher) Metrics(ctx context.Context, name string) (*Stats, error) {
	if err := checkTopology(name); err != nil {
		return nil, err
	}
	_, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return nil, err
	}
	defer closeSM()
	loc, err := l.tmanager(ctx, store, name)
	if err != nil {
		return nil, err
	}
	var raw struct {
		TopologyID string `json:"topology_id"`
		Components map[string]struct {
			Sums map[string]float64 `json:"sums"`
		} `json:"components"`
		Containers map[string]map[string]struct {
			Metrics map[string]float64 `json:"metrics"`
		} `json:"containers"`
	}
	if err := getTManager(ctx, loc, "/stats", &raw); err != nil {
		return nil, fmt.Errorf("topology manager of %q: %w", name, err)
	}
	out := &Stats{Topology: name, Components: map[string]map[string]float64{}}
	if out.HealthManager, err = healthReport(ctx, store, name, raw.TopologyID, raw.Containers["0"]["healthmgr"].Metrics); err != nil {
		l.Log.Warn("cannot read the health manager's decisions", zap.Error(err))
	}
	for c, v := range raw.Components {
		out.Components[c] = v.Sums
	}
	for k, v := range raw.Containers["0"]["tmanager"].Metrics {
		if strings.HasPrefix(k, "checkpoint.") {
			if out.Checkpoints == nil {
				out.Checkpoints = map[string]float64{}
			}
			out.Checkpoints[k] = v
		}
	}
	for c, srcs := range raw.Containers {
		if ex, ok := srcs["executor"]; ok {
			if out.Executors == nil {
				out.Executors = map[string]map[string]float64{}
			}
			out.Executors[c] = ex.Metrics
		}
	}
	return out, nil
}

// Scale returns a topology's task count per component and its number of
// containers (without container 0), from its packing plan.
func (l *Launcher) Scale(ctx context.Context, name string) (map[string]int, int, error) {
	if err := checkTopology(name); err != nil {
		return nil, 0, err
	}
	_, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	defer closeSM()
	pp, _, err := store.PackingPlan(ctx, name)
	if err != nil {
		return nil, 0, killHint(name, err)
	}
	out := map[string]int{}
	for _, c := range pp.Containers {
		for _, in := range c.Instances {
			out[in.Component]++
		}
	}
	return out, len(pp.Containers), nil
}
