package launcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

// DefaultWaitHealthy bounds how long an upgrade waits for a restarted
// container to be healthy (UpgradeOptions.WaitHealthy).
const DefaultWaitHealthy = 60 * time.Second

// DefaultMaxExceptions is the number of exceptions a restarted container's
// instances may report before the upgrade calls it an exception storm
// (UpgradeOptions.MaxExceptions).
const DefaultMaxExceptions = 100

// UpgradeOptions describe a rolling upgrade (or its rollback).
type UpgradeOptions struct {
	// Binary is the new topology binary or Go package (as for submit);
	// Args go to it in define mode, Resources is shipped as resources/.
	Binary        string
	Args          []string
	DefineTimeout time.Duration
	Resources     string
	// Containers restarts only these containers, in this order.
	Containers []int
	// Canary upgrades only the first Canary containers (by id) and stops;
	// a plain upgrade with the same binary does the rest later.
	Canary int
	// Rollback returns every container to the package the latest upgrade
	// replaced; it takes no binary.
	Rollback bool
	// WaitHealthy bounds the wait for each restarted container to be
	// healthy again (0: DefaultWaitHealthy).
	WaitHealthy time.Duration
	// MaxExceptions is the exception count of a restarted container that
	// fails the upgrade (0: DefaultMaxExceptions).
	MaxExceptions int
	// DrainTimeout bounds the drain before each container restarts: the
	// spouts of a running topology are deactivated and the restart waits,
	// at most this long, until nothing is in flight (see drain); the
	// spouts are activated again once the container is back. 0: no drain,
	// the container restarts while tuples flow.
	DrainTimeout time.Duration
}

// Validate checks the options alone, before anything is read or run.
func (o UpgradeOptions) Validate() error {
	switch {
	case o.Rollback && o.Binary != "":
		return badInput(errors.New("--rollback returns to the previous package and takes no binary: drop the binary (or --rollback)"))
	case o.Rollback && (len(o.Containers) > 0 || o.Canary > 0):
		return badInput(errors.New("--rollback returns every container to the previous package: drop --containers and --canary"))
	case !o.Rollback && o.Binary == "":
		return badInput(errors.New("upgrade needs the new topology binary or Go package (or --rollback): egret upgrade local wordcount ./wordcount-v2"))
	case len(o.Containers) > 0 && o.Canary > 0:
		return badInput(errors.New("--containers and --canary exclude each other: give one"))
	case o.Canary < 0:
		return badInput(fmt.Errorf("--canary %d: give the number of containers to upgrade first (at least 1)", o.Canary))
	case o.WaitHealthy < 0:
		return badInput(fmt.Errorf("--wait-healthy %s is negative", o.WaitHealthy))
	case o.MaxExceptions < 0:
		return badInput(fmt.Errorf("--max-exceptions %d is negative", o.MaxExceptions))
	case o.DrainTimeout < 0:
		return badInput(fmt.Errorf("--drain-timeout %s is negative", o.DrainTimeout))
	}
	seen := map[int]bool{}
	for _, c := range o.Containers {
		switch {
		case c == 0:
			return badInput(errors.New("--containers 0: container 0 runs the topology manager, no topology code; an upgrade restarts containers 1 and up"))
		case c < 0:
			return badInput(fmt.Errorf("--containers %d: container ids are 1 and up", c))
		case seen[c]:
			return badInput(fmt.Errorf("--containers lists container %d twice", c))
		}
		seen[c] = true
	}
	return nil
}

// ParseContainers parses the value of --containers: container ids
// separated by commas, such as 1,3.
func ParseContainers(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || f == "" || strings.ContainsAny(f, "+-") {
			return nil, badInput(fmt.Errorf("--containers %q: want container ids separated by commas, such as 1,3", s))
		}
		out = append(out, n)
	}
	return out, nil
}

// UpgradeStep is one container an upgrade restarted.
type UpgradeStep struct {
	Container int    `json:"container"`
	From      string `json:"from_sha256"`
	To        string `json:"to_sha256"`
	// Restarted is when the scheduler was asked to restart it; Healthy
	// how long it took from then to be healthy.
	Restarted time.Time     `json:"restarted"`
	Healthy   time.Duration `json:"healthy_after_ns"`
	// Drained says that the topology was deactivated and drained before
	// the restart (and activated again after it), Drain how long that
	// drain took (the timeout when it timed out: DrainTimedOut).
	Drained       bool          `json:"drained"`
	Drain         time.Duration `json:"drain_ns,omitempty"`
	DrainTimedOut bool          `json:"drain_timed_out,omitempty"`
}

// UpgradeResult says what an upgrade did.
type UpgradeResult struct {
	Topology string `json:"topology"`
	// Package is what the upgrade rolled out (or back to).
	Package *egretpb.PackageRef `json:"-"`
	Steps   []UpgradeStep       `json:"steps"`
	// Unchanged lists the chosen containers that ran the package already.
	Unchanged []int `json:"unchanged,omitempty"`
	// Packages is which package each container runs at the end.
	Packages []PackageUse `json:"packages"`
}

// PackageUse is a package and the containers that run it.
type PackageUse struct {
	SHA256 string `json:"sha256"`
	URI    string `json:"uri"`
	// BinarySHA256 is the digest of the topology binary in the package
	// (empty: not recorded, a package of an older egret).
	BinarySHA256 string `json:"binary_sha256,omitempty"`
	Containers   []int  `json:"containers"`
}

// FileSHA256 is the hex sha256 digest of a file's content.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ShortSHA is how a package digest is shown: its first 12 hex digits.
func ShortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// PackagesSummary shows uses in one line: "1a2b3c4d5e6f on containers 1,3;
// 9f8e7d6c5b4a on 2".
func PackagesSummary(uses []PackageUse) string {
	parts := make([]string, 0, len(uses))
	for i, u := range uses {
		ids := make([]string, len(u.Containers))
		for j, c := range u.Containers {
			ids[j] = strconv.Itoa(c)
		}
		what := "containers "
		switch {
		case i > 0:
			what = ""
		case len(u.Containers) == 1:
			what = "container "
		}
		parts = append(parts, fmt.Sprintf("%s on %s%s", ShortSHA(u.SHA256), what, strings.Join(ids, ",")))
	}
	return strings.Join(parts, "; ")
}

// packageUses groups the containers of a plan by the package they run.
func packageUses(es *egretpb.ExecutionState, ids []int) []PackageUse {
	var out []PackageUse
	for _, c := range ids {
		ref := state.ContainerPackage(es, c)
		i := slices.IndexFunc(out, func(u PackageUse) bool { return u.SHA256 == ref.GetSha256() && u.URI == ref.GetUri() })
		if i < 0 {
			out = append(out, PackageUse{SHA256: ref.GetSha256(), URI: ref.GetUri(), BinarySHA256: ref.GetBinarySha256()})
			i = len(out) - 1
		}
		out[i].Containers = append(out[i].Containers, c)
	}
	return out
}

func containerIDs(pp *plan.PackingPlan) []int {
	ids := make([]int, 0, len(pp.Containers))
	for _, c := range pp.Containers {
		ids = append(ids, c.ID)
	}
	sort.Ints(ids)
	return ids
}

func samePackage(a, b *egretpb.PackageRef) bool {
	return a.GetUri() == b.GetUri() && strings.EqualFold(a.GetSha256(), b.GetSha256())
}

// referencedURIs are the packages an execution state names.
func referencedURIs(es *egretpb.ExecutionState) map[string]bool {
	out := map[string]bool{}
	for _, uri := range []string{es.GetPackageUri(), es.GetCurrentPackage().GetUri(), es.GetPreviousPackage().GetUri()} {
		if uri != "" {
			out[uri] = true
		}
	}
	for _, ref := range es.GetContainerPackages() {
		if ref.GetUri() != "" {
			out[ref.GetUri()] = true
		}
	}
	return out
}

// upgrading is one upgrade in progress.
type upgrading struct {
	name    string
	cfg     spi.Config
	store   *state.Store
	sched   spi.Scheduler
	es      *egretpb.ExecutionState
	pp      *plan.PackingPlan
	target  *egretpb.PackageRef
	restart []int
	res     *UpgradeResult
	// before holds the URIs the execution state named at the start.
	before map[string]bool
}

// Upgrade restarts the containers of a running topology one at a time on
// a new package (a rolling upgrade), waiting for each to be healthy before
// the next, or returns them to the previous package (o.Rollback).
//
// Everything is checked before anything changes: the options, the new
// binary's definition (same name, and a logical plan compatible with the
// running one: CompatibilityDiff), the containers chosen and the
// scheduler's health. Then, holding the topology's lock, it uploads the
// package and records it in the execution state as the topology's package
// (the containers not restarted yet are pinned to the package they run,
// so that a container that restarts on its own keeps its code), and for
// each container: records the new package for it, asks the scheduler to
// restart it (its executor reads the record and fetches that package)
// and waits until it is healthy (a running topology is drained around the
// restart, o.DrainTimeout: see restartHealthy): its stream manager registered again,
// every instance of it reports from a new process that did not restart
// since, moves tuples again when it did before (a running topology), and
// reported at most o.MaxExceptions exceptions. A container that is not
// healthy in time stops the upgrade; the error says which containers run
// which package and that --rollback returns them. Container 0 (the
// topology manager) runs no topology code and is not restarted.
func (l *Launcher) Upgrade(ctx context.Context, name string, o UpgradeOptions) (*UpgradeResult, error) {
	if err := checkTopology(name); err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.WaitHealthy == 0 {
		o.WaitHealthy = DefaultWaitHealthy
	}
	if o.MaxExceptions == 0 {
		o.MaxExceptions = DefaultMaxExceptions
	}
	var resources map[string]string
	var err error
	if o.Resources != "" {
		if resources, err = resourceFiles(o.Resources); err != nil {
			return nil, err
		}
	}
	tmp, err := os.MkdirTemp("", "egret-upgrade-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var next *topology.Topology
	var binary, defn string
	if !o.Rollback {
		if binary, err = l.binary(ctx, o.Binary, tmp); err != nil {
			return nil, err
		}
		l.progress("defining topology from %s", o.Binary)
		if next, defn, err = define(ctx, binary, o.Args, tmp, o.DefineTimeout); err != nil {
			return nil, err
		}
		if next.Name != name {
			return nil, badInput(fmt.Errorf("%s defines topology %q, not %q: an upgrade keeps the topology (give the binary of %q, or submit this one)", o.Binary, next.Name, name, name))
		}
	}
	cluster, err := l.Cluster.WithTopology(name)
	if err != nil {
		return nil, err
	}
	cfg := cluster.Config()
	sm, err := l.Backends.StateManager(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("state manager: %w", err)
	}
	defer sm.Close()
	store := state.New(sm)
	unlock, err := l.lock(ctx, store, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	u, err := l.planUpgrade(ctx, cfg, store, name, next, o)
	if err != nil {
		return nil, err
	}
	defer u.sched.Close()
	if !o.Rollback {
		if err := l.uploadUpgrade(ctx, u, binary, defn, resources, tmp); err != nil {
			return nil, err
		}
	}
	if err := l.roll(ctx, u, o); err != nil {
		return u.res, err
	}
	return u.res, nil
}

// planUpgrade reads the topology and checks the upgrade; nothing changes.
func (l *Launcher) planUpgrade(ctx context.Context, cfg spi.Config, store *state.Store, name string, next *topology.Topology, o UpgradeOptions) (*upgrading, error) {
	// The health of each restarted container is read through the
	// topology manager: without one (starting, down) nothing can be
	// checked, so nothing starts.
	if _, err := l.tmanager(ctx, store, name); err != nil {
		return nil, fmt.Errorf("cannot upgrade: %w", err)
	}
	running, err := store.Topology(ctx, name)
	if err != nil {
		return nil, killHint(name, err)
	}
	es, err := store.ExecutionState(ctx, name)
	if err != nil {
		return nil, killHint(name, err)
	}
	pp, _, err := store.PackingPlan(ctx, name)
	if err != nil {
		return nil, killHint(name, err)
	}
	ids := containerIDs(pp)
	u := &upgrading{name: name, cfg: cfg, store: store, es: es, pp: pp, before: referencedURIs(es),
		res: &UpgradeResult{Topology: name}}
	if o.Rollback {
		u.target = es.GetPreviousPackage()
		if u.target.GetUri() == "" {
			return nil, badInput(fmt.Errorf("topology %q has no previous package to roll back to (it was never upgraded, or its last upgrade was rolled back already); it runs %s", name, PackagesSummary(packageUses(es, ids))))
		}
	} else {
		if diff := CompatibilityDiff(running, next); len(diff) > 0 {
			return nil, badInput(withHint(
				fmt.Errorf("the new binary's topology %q is not compatible with the running one (%d changes): %s", name, len(diff), strings.Join(diff, "; ")),
				"a rolling upgrade keeps the components, their kinds, streams, fields and subscriptions; kill the topology and submit the new binary instead"))
		}
		if changed := configDiff(running, next); len(changed) > 0 {
			l.progress("note: the new definition changes settings %s; an upgrade changes code only, the running topology keeps its settings (egret update --runtime-config changes the live ones)", strings.Join(changed, ", "))
		}
	}
	// Which containers to restart.
	var chosen []int
	switch {
	case len(o.Containers) > 0:
		for _, c := range o.Containers {
			if _, ok := pp.Container(c); !ok {
				return nil, badInput(fmt.Errorf("--containers %d: topology %q has no container %d (containers %s)", c, name, c, intList(ids)))
			}
		}
		chosen = o.Containers
	case o.Canary > 0:
		if o.Canary >= len(ids) {
			return nil, badInput(fmt.Errorf("--canary %d: topology %q has %d containers; a canary upgrades fewer than all (drop --canary to upgrade every container)", o.Canary, name, len(ids)))
		}
		chosen = ids[:o.Canary]
	default:
		chosen = ids
	}
	u.res.Packages = packageUses(es, ids)
	if !o.Rollback {
		// The sha of the new package is known only once it is built:
		// uploadUpgrade finishes the choice.
		u.restart = chosen
	} else {
		for _, c := range chosen {
			if samePackage(state.ContainerPackage(es, c), u.target) {
				u.res.Unchanged = append(u.res.Unchanged, c)
				continue
			}
			u.restart = append(u.restart, c)
		}
	}
	if u.sched, err = l.Backends.Scheduler(ctx, cfg); err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if p, ok := u.sched.(spi.Prober); ok {
		if err := p.Probe(ctx, name); err != nil {
			u.sched.Close()
			return nil, fmt.Errorf("cannot upgrade topology %q: %w", name, err)
		}
	}
	return u, nil
}

// uploadUpgrade builds and uploads the new package and finishes the choice
// of containers: those that run it already are left alone.
func (l *Launcher) uploadUpgrade(ctx context.Context, u *upgrading, binary, defn string, resources map[string]string, tmp string) error {
	cluster, err := l.Cluster.WithTopology(u.name)
	if err != nil {
		return err
	}
	extra := maps.Clone(resources)
	if extra == nil {
		extra = map[string]string{}
	}
	if err := l.bundleEgret(u.cfg, extra); err != nil {
		return err
	}
	pkg := spi.Package{Topology: u.name, Role: cluster.Role, Cluster: cluster.Name, Path: filepath.Join(tmp, u.name+".tar.gz")}
	if pkg.SHA256, err = buildPackage(pkg.Path, u.cfg, binary, defn, extra); err != nil {
		return err
	}
	binarySHA, err := FileSHA256(binary)
	if err != nil {
		return err
	}
	current := state.TopologyPackage(u.es)
	if len(u.res.Packages) > 1 && !strings.EqualFold(pkg.SHA256, current.GetSha256()) {
		return badInput(fmt.Errorf("topology %q runs %s: an upgrade to %s is under way or stopped (a canary?); finish it with the same binary or roll it back with egret upgrade --rollback before upgrading to another package (%s)",
			u.name, PackagesSummary(u.res.Packages), ShortSHA(current.GetSha256()), ShortSHA(pkg.SHA256)))
	}
	var restart []int
	for _, c := range u.restart {
		if strings.EqualFold(state.ContainerPackage(u.es, c).GetSha256(), pkg.SHA256) {
			u.res.Unchanged = append(u.res.Unchanged, c)
			continue
		}
		restart = append(restart, c)
	}
	u.restart = restart
	if len(restart) == 0 {
		u.target = &egretpb.PackageRef{Uri: current.GetUri(), Sha256: pkg.SHA256, BinarySha256: binarySHA}
		if strings.EqualFold(current.GetSha256(), pkg.SHA256) {
			return nil // nothing to upload
		}
	}
	up, err := l.Backends.Uploader(ctx, u.cfg)
	if err != nil {
		return fmt.Errorf("uploader: %w", err)
	}
	defer up.Close()
	l.progress("uploading the new topology package %s (%s)", ShortSHA(pkg.SHA256), u.cfg.String("egret.uploader", ""))
	uri, err := up.Upload(ctx, pkg)
	if err != nil {
		return fmt.Errorf("upload the topology package: %w", err)
	}
	u.target = &egretpb.PackageRef{Uri: uri, Sha256: pkg.SHA256, BinarySha256: binarySHA}
	return nil
}

// roll records the target, restarts the chosen containers one by one and
// tidies the execution state up.
func (l *Launcher) roll(ctx context.Context, u *upgrading, o UpgradeOptions) error {
	es := proto.Clone(u.es).(*egretpb.ExecutionState)
	ids := containerIDs(u.pp)
	current := state.TopologyPackage(es)
	if !samePackage(current, u.target) {
		// Pin what every container runs now, then make the target the
		// topology's package (what new containers get).
		if es.ContainerPackages == nil {
			es.ContainerPackages = map[int32]*egretpb.PackageRef{}
		}
		for _, c := range ids {
			if _, ok := es.ContainerPackages[int32(c)]; !ok {
				es.ContainerPackages[int32(c)] = proto.Clone(current).(*egretpb.PackageRef)
			}
		}
		if !o.Rollback {
			es.PreviousPackage = proto.Clone(current).(*egretpb.PackageRef)
		}
		es.CurrentPackage = proto.Clone(u.target).(*egretpb.PackageRef)
	}
	es.UpgradeTimeUnix = time.Now().Unix()
	if err := u.store.SetExecutionState(ctx, u.name, es); err != nil {
		l.cleanPackages(ctx, u, u.es) // nothing changed: the new package goes
		return fmt.Errorf("record the new package of %q: %w", u.name, err)
	}
	u.res.Package = u.target
	verb := "upgrading"
	if o.Rollback {
		verb = "rolling back"
	}
	if len(u.restart) == 0 {
		l.progress("every chosen container of %q runs package %s already", u.name, ShortSHA(u.target.GetSha256()))
	}
	for i, c := range u.restart {
		from := state.ContainerPackage(es, c)
		es.ContainerPackages[int32(c)] = proto.Clone(u.target).(*egretpb.PackageRef)
		if err := u.store.SetExecutionState(ctx, u.name, es); err != nil {
			return l.stopped(ctx, u, es, fmt.Errorf("record the package of container %d: %w", c, err))
		}
		l.progress("%s container %d of %q (%d of %d): package %s -> %s", verb, c, u.name, i+1, len(u.restart), ShortSHA(from.GetSha256()), ShortSHA(u.target.GetSha256()))
		step, err := l.restartHealthy(ctx, u, c, o)
		if err != nil {
			if step == nil {
				// Not restarted: the container runs what it ran.
				es.ContainerPackages[int32(c)] = from
				if werr := u.store.SetExecutionState(context.WithoutCancel(ctx), u.name, es); werr != nil {
					l.Log.Warn("could not record the package container %d still runs", zap.Int("container", c), zap.Error(werr))
				}
			}
			return l.stopped(ctx, u, es, err)
		}
		step.From, step.To = from.GetSha256(), u.target.GetSha256()
		u.res.Steps = append(u.res.Steps, *step)
		l.progress("container %d is healthy on package %s %s after its restart%s", c, ShortSHA(u.target.GetSha256()), step.Healthy.Round(time.Millisecond), step.drainNote())
	}
	// Entries equal to the topology's package say nothing more.
	for c, ref := range es.ContainerPackages {
		if samePackage(ref, es.CurrentPackage) {
			delete(es.ContainerPackages, c)
		}
	}
	if o.Rollback && len(es.ContainerPackages) == 0 {
		es.PreviousPackage = nil // rolled back: nothing more to roll back to
	}
	if err := u.store.SetExecutionState(ctx, u.name, es); err != nil {
		return fmt.Errorf("record the packages of %q: %w", u.name, err)
	}
	u.res.Packages = packageUses(es, ids)
	l.cleanPackages(ctx, u, es)
	return nil
}

// stopped is the error of an upgrade that stopped at a container: what
// runs where now, and the way back.
func (l *Launcher) stopped(ctx context.Context, u *upgrading, es *egretpb.ExecutionState, cause error) error {
	u.res.Packages = packageUses(es, containerIDs(u.pp))
	back := fmt.Sprintf("egret upgrade %s %s --rollback returns every container to %s", u.es.GetCluster(), u.name, ShortSHA(es.GetPreviousPackage().GetSha256()))
	if es.GetPreviousPackage().GetUri() == "" || samePackage(es.GetPreviousPackage(), u.target) {
		back = "egret upgrade with the previous binary returns them"
	}
	return fmt.Errorf("upgrade of topology %q stopped: %w; it runs %s; %s", u.name, cause, PackagesSummary(u.res.Packages), back)
}

// cleanPackages removes the packages the execution state named at the
// start and names no more (a package rolled back, or replaced by a newer
// upgrade), and an uploaded package that it does not name.
func (l *Launcher) cleanPackages(ctx context.Context, u *upgrading, es *egretpb.ExecutionState) {
	now := referencedURIs(es)
	gone := map[string]bool{}
	for uri := range u.before {
		if !now[uri] {
			gone[uri] = true
		}
	}
	if uri := u.target.GetUri(); uri != "" && !now[uri] {
		gone[uri] = true
	}
	for uri := range gone {
		l.progress("removing package %s, which no container runs any more", uri)
		l.removePackage(ctx, u.cfg, uri)
	}
}

// restartHealthy restarts container c and waits until it is healthy. It
// returns no step when the container was not restarted.
//
// With o.DrainTimeout, a running topology is deactivated and drained
// first (the tuples in flight are processed and acked before their
// processes stop: no replay), the container restarts, and once it is
// healthy but for its throughput (it cannot move tuples while the spouts
// are deactivated) the topology is activated again and the restarted
// instances must move tuples as before. On any failure the topology is
// activated again. A topology the operator deactivated is not drained
// and stays deactivated.
func (l *Launcher) restartHealthy(ctx context.Context, u *upgrading, c int, o UpgradeOptions) (step *UpgradeStep, err error) {
	pc, _ := u.pp.Container(c)
	tasks := map[int]string{}
	for _, in := range pc.Instances {
		tasks[in.TaskID] = in.Component
	}
	loc, err := u.store.TManagerLocation(ctx, u.name)
	if err != nil {
		return nil, fmt.Errorf("no topology manager to check the health of container %d through (%v); is the topology running? (egret list)", c, err)
	}
	active := true
	if ph, err := u.store.PhysicalPlan(ctx, u.name); err == nil {
		active = ph.GetState() != egretpb.TopologyState_TOPOLOGY_STATE_PAUSED
	}
	before, err := readHealth(ctx, loc, c, tasks)
	if err != nil {
		l.Log.Debug("upgrade: the health before the restart is unknown", zap.Error(err))
		before = &health{tasks: map[int]taskHealth{}}
	}
	if !active {
		l.progress("%q is deactivated: it is not drained, and the throughput of container %d is not checked", u.name, c)
	}
	step = &UpgradeStep{Container: c}
	deactivated := false
	if active && o.DrainTimeout > 0 {
		since := time.Now()
		if err := l.postTManager(ctx, loc, u.name, "/deactivate", nil); err != nil {
			return nil, fmt.Errorf("deactivate %q to drain it before container %d restarts: %w (--drain-timeout 0s restarts without a drain)", u.name, c, err)
		}
		deactivated = true
		defer func() {
			if err == nil || !deactivated {
				return
			}
			l.progress("activating %q again", u.name)
			if aerr := l.activateAgain(context.WithoutCancel(ctx), u.name); aerr != nil {
				err = fmt.Errorf("%w (and its spouts stay deactivated: %v; egret activate starts them)", err, aerr)
			}
		}()
		d := l.settle(ctx, loc, u.name, o.DrainTimeout, since)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		step.Drained, step.Drain, step.DrainTimedOut = true, time.Since(since), !d.ok
	}
	step.Restarted = time.Now()
	if err := u.sched.Restart(ctx, u.name, c); err != nil {
		return nil, fmt.Errorf("restart container %d: %w", c, err)
	}
	w := healthWait{c: c, tasks: tasks, before: before, since: step.Restarted, active: active && !deactivated, maxExc: o.MaxExceptions,
		seen: map[int]float64{}}
	deadline := time.Now().Add(o.WaitHealthy)
	why := "no report yet"
	for {
		if loc2, err := u.store.TManagerLocation(ctx, u.name); err == nil {
			loc = loc2
		}
		now, err := readHealth(ctx, loc, c, tasks)
		if err != nil {
			why = err.Error()
		} else {
			ok, reason, fatal := w.check(now)
			if fatal {
				return step, fmt.Errorf("container %d is unhealthy on the new package: %s", c, reason)
			}
			if ok && deactivated {
				// Back but for its throughput: the spouts go on, and the
				// restarted instances must move tuples again.
				l.progress("container %d is back: activating %q", c, u.name)
				if err := l.activateAgain(ctx, u.name); err != nil {
					return step, fmt.Errorf("activate %q after the restart of container %d: %w", u.name, c, err)
				}
				deactivated, w.active = false, true
				continue
			}
			if ok {
				step.Healthy = time.Since(step.Restarted)
				return step, nil
			}
			why = reason
		}
		if time.Now().After(deadline) {
			return step, fmt.Errorf("container %d is not healthy %s after its restart (--wait-healthy): %s", c, o.WaitHealthy, why)
		}
		select {
		case <-ctx.Done():
			return step, ctx.Err()
		case <-time.After(drainPoll):
		}
	}
}

// drainNote says how the drain before a step went.
func (s *UpgradeStep) drainNote() string {
	switch {
	case !s.Drained:
		return " (not drained)"
	case s.DrainTimedOut:
		return fmt.Sprintf(" (its drain timed out after %s)", s.Drain.Round(time.Millisecond))
	}
	return fmt.Sprintf(" (drained in %s before it)", s.Drain.Round(time.Millisecond))
}

// activateAgain activates the spouts an upgrade step deactivated, once the
// topology manager accepts it (a complete physical plan).
func (l *Launcher) activateAgain(ctx context.Context, name string) error {
	return retryConflict(ctx, func() error { return l.SetActive(ctx, name, true) })
}

// Comparison is how a binary (with its arguments) compares with a
// running topology (egret apply).
type Comparison struct {
	// BinarySHA256 is the digest of the topology binary that submit or
	// upgrade would ship: the file itself, or what a Go package builds to
	// for the cluster's OS and architecture (compared with the running
	// packages' PackageUse.BinarySHA256).
	BinarySHA256 string
	// Incompatible is CompatibilityDiff of the running definition and the
	// binary's: what a rolling upgrade cannot change.
	Incompatible []string
	// Settings names the topology and component settings that differ
	// (component:key), which an upgrade does not change.
	Settings []string
}

// Compare builds binary as submit would, defines it with args and compares
// it with the running definition of topology name; nothing changes.
func (l *Launcher) Compare(ctx context.Context, name, binary string, args []string) (*Comparison, error) {
	tmp, err := os.MkdirTemp("", "egret-compare-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	path, err := l.binary(ctx, binary, tmp)
	if err != nil {
		return nil, err
	}
	c := &Comparison{}
	if c.BinarySHA256, err = FileSHA256(path); err != nil {
		return nil, err
	}
	next, _, err := define(ctx, path, args, tmp, 0)
	if err != nil {
		return nil, err
	}
	if next.Name != name {
		return nil, badInput(fmt.Errorf("%s defines topology %q, not %q", binary, next.Name, name))
	}
	_, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return nil, err
	}
	defer closeSM()
	running, err := store.Topology(ctx, name)
	if err != nil {
		return nil, killHint(name, err)
	}
	c.Incompatible = CompatibilityDiff(running, next)
	c.Settings = configDiff(running, next)
	return c, nil
}
