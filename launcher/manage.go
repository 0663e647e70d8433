package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

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

// Kill stops a topology and removes its state and package. It succeeds for
// a topology that is not (or only partly) there.
func (l *Launcher) Kill(ctx context.Context, name string) error {
	if err := checkTopology(name); err != nil {
		return err
	}
	cfg, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return err
	}
	defer closeSM()
	es, esErr := store.ExecutionState(ctx, name)
	l.progress("stopping the containers of %q", name)
	sched, err := l.Backends.Scheduler(ctx, cfg)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	defer sched.Close()
	if err := sched.Kill(ctx, name); err != nil {
		return fmt.Errorf("kill the containers of %q: %w", name, err)
	}
	l.progress("removing the state of %q", name)
	if err := store.Kill(ctx, name); err != nil {
		return err
	}
	if esErr == nil && es.GetPackageUri() != "" {
		if up, err := l.Backends.Uploader(ctx, cfg); err == nil {
			if err := up.Undo(ctx, es.GetPackageUri()); err != nil {
				l.Log.Warn("could not remove the topology package", zap.String("uri", es.GetPackageUri()), zap.Error(err))
			}
			_ = up.Close()
		}
	}
	return nil
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
	if err := requireRunning(ctx, store, name); err != nil {
		return err
	}
	loc, err := store.TManagerLocation(ctx, name)
	if err != nil {
		return fmt.Errorf("topology %q has no topology manager yet (it may be starting): %w", name, err)
	}
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
		return err
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
	cfg, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return err
	}
	defer closeSM()
	if err := requireRunning(ctx, store, name); err != nil {
		return err
	}
	if container != spi.AllContainers {
		pp, _, err := store.PackingPlan(ctx, name)
		if err != nil {
			return err
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
}

// Update rescales a topology (repacking it and handing the new plan to the
// scheduler) and/or changes its runtime config.
//
// A rescale restarts the topology's instances with the new plan. A running
// topology is deactivated first and activated again once the new physical
// plan is in place, so that no spout emits while instances restart (with
// at-most-once delivery, tuples in flight at the moment of the switch
// could otherwise be lost).
func (l *Launcher) Update(ctx context.Context, name string, o UpdateOptions) error {
	if err := checkTopology(name); err != nil {
		return err
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

func (l *Launcher) rescale(ctx context.Context, name string, o UpdateOptions) error {
	_, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return err
	}
	defer closeSM()
	before, err := store.PhysicalPlan(ctx, name)
	running := err == nil && before.GetState() == egretpb.TopologyState_TOPOLOGY_STATE_RUNNING
	if running {
		l.progress("deactivating %q while it is rescaled", name)
		if err := l.SetActive(ctx, name, false); err != nil {
			return err
		}
	}
	if err := l.repack(ctx, name, o); err != nil {
		return err
	}
	if !running {
		return nil
	}
	l.progress("waiting for the new physical plan")
	if err := waitPlan(ctx, store, name, before.GetVersion(), time.Minute); err != nil {
		return err
	}
	l.progress("activating %q", name)
	return retryConflict(ctx, func() error { return l.SetActive(ctx, name, true) })
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

func (l *Launcher) repack(ctx context.Context, name string, o UpdateOptions) error {
	cfg, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return err
	}
	defer closeSM()
	unlock, err := store.Lock(ctx, name)
	if err != nil {
		return err
	}
	defer func() { _ = unlock() }()
	if err := requireRunning(ctx, store, name); err != nil {
		return err
	}
	t, err := store.Topology(ctx, name)
	if err != nil {
		return err
	}
	current, version, err := store.PackingPlan(ctx, name)
	if err != nil {
		return err
	}
	es, err := store.ExecutionState(ctx, name)
	if err != nil {
		return err
	}
	for comp, n := range o.Parallelism {
		c, ok := t.Component(comp)
		if !ok {
			return fmt.Errorf("topology %q has no component %q (components: %s)", name, comp, strings.Join(componentNames(t.Components), ", "))
		}
		if n < 1 {
			return fmt.Errorf("component %q: parallelism %d must be at least 1", comp, n)
		}
		c.Parallelism = n
	}
	packer, err := l.Backends.Packing(ctx, cfg)
	if err != nil {
		return err
	}
	repacker, ok := packer.(spi.Repacking)
	if !ok {
		return fmt.Errorf("packing algorithm %s cannot repack a running topology: %w", cfg.String("egret.packing", ""), spi.ErrUnsupported)
	}
	l.progress("repacking %q", name)
	next, err := repacker.Repack(t, current, o.Parallelism, o.Containers)
	if err != nil {
		return fmt.Errorf("repack topology %q: %w", name, err)
	}
	next.TopologyID = current.TopologyID
	if err := next.Validate(t); err != nil {
		return err
	}
	l.progress("writing the new packing plan (%d containers)", len(next.Containers))
	if err := store.UpdatePackingPlan(ctx, t, next, version); err != nil {
		return fmt.Errorf("write the new packing plan of %q: %w", name, err)
	}
	sched, err := l.Backends.Scheduler(ctx, cfg)
	if err != nil {
		return err
	}
	defer sched.Close()
	l.progress("asking the scheduler to apply it")
	job := spi.Job{Topology: name, TopologyID: t.ID, Cluster: es.GetCluster(), Role: es.GetRole(), Environ: es.GetEnviron(),
		PackageURI: es.GetPackageUri(), PackageSHA256: es.GetPackageSha256(), Plan: next, Config: cfg}
	return sched.Update(ctx, job)
}

// TopologyInfo is one row of List.
type TopologyInfo struct {
	Name       string    `json:"name"`
	ID         string    `json:"id"`
	Cluster    string    `json:"cluster"`
	Role       string    `json:"role"`
	Environ    string    `json:"environ"`
	State      string    `json:"state"`
	Containers int       `json:"containers"`
	Instances  int       `json:"instances"`
	Submitted  time.Time `json:"submitted"`
	User       string    `json:"user"`
}

// List returns the topologies of the cluster.
func (l *Launcher) List(ctx context.Context) ([]TopologyInfo, error) {
	cfg := l.Cluster.Config()
	sm, err := l.Backends.StateManager(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("state manager: %w", err)
	}
	defer sm.Close()
	store := state.New(sm)
	names, err := store.Topologies(ctx)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []TopologyInfo
	for _, n := range names {
		info := TopologyInfo{Name: n, State: "starting"}
		if es, err := store.ExecutionState(ctx, n); err == nil {
			info.ID, info.Cluster, info.Role, info.Environ = es.GetTopologyId(), es.GetCluster(), es.GetRole(), es.GetEnviron()
			info.Submitted, info.User = time.Unix(es.GetSubmitTimeUnix(), 0), es.GetSubmitUser()
		}
		if pp, _, err := store.PackingPlan(ctx, n); err == nil {
			info.Containers = len(pp.Containers)
			for _, c := range pp.Containers {
				info.Instances += len(c.Instances)
			}
		}
		if pplan, err := store.PhysicalPlan(ctx, n); err == nil {
			switch pplan.GetState() {
			case egretpb.TopologyState_TOPOLOGY_STATE_RUNNING:
				info.State = "running"
			case egretpb.TopologyState_TOPOLOGY_STATE_PAUSED:
				info.State = "deactivated"
			}
		}
		out = append(out, info)
	}
	return out, nil
}

func componentNames(cs []topology.Component) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// ParseParallelism parses "component:n" values of --component-parallelism.
func ParseParallelism(values []string) (map[string]int, error) {
	out := map[string]int{}
	for _, v := range values {
		comp, num, ok := strings.Cut(v, ":")
		n, err := strconv.Atoi(num)
		if !ok || comp == "" || err != nil {
			return nil, fmt.Errorf("--component-parallelism %q: want component:count, for example count:4", v)
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
	if err := requireRunning(ctx, store, name); err != nil {
		return nil, err
	}
	loc, err := store.TManagerLocation(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("topology %q has no topology manager yet (it may be starting): %w", name, err)
	}
	u := fmt.Sprintf("http://%s:%d/stats", loc.GetHost(), loc.GetHttpPort())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("topology manager of %q at %s: %w", name, u, err)
	}
	defer resp.Body.Close()
	var raw struct {
		Components map[string]struct {
			Sums map[string]float64 `json:"sums"`
		} `json:"components"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&raw); err != nil {
		return nil, fmt.Errorf("topology manager of %q: bad /stats answer: %w", name, err)
	}
	out := &Stats{Topology: name, Components: map[string]map[string]float64{}}
	for c, v := range raw.Components {
		out.Components[c] = v.Sums
	}
	return out, nil
}
