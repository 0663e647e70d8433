package state

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

// The directories of the node tree.
const (
	TopologiesDir     = "/topologies"
	PackingPlansDir   = "/packingplans"
	ExecutionStateDir = "/executionstate"
	PhysicalPlansDir  = "/pplans"
	TManagersDir      = "/tmanagers"
	SchedulersDir     = "/schedulers"
	LocksDir          = "/locks"
	// CheckpointsDir holds the checkpoints of effectively-once topologies.
	CheckpointsDir = "/checkpoints"
	// ShellsDir holds the location of every container's shell, one
	// ephemeral node per container (ShellNode).
	ShellsDir = "/shells"
	// SecretsDir holds each topology's secret, written at submit.
	SecretsDir = "/secrets"
	// HealthDir holds the decisions of each topology's health manager.
	HealthDir = "/healthmgr"
)

// allDirs are the directories Kill deletes a topology's node from (the
// ephemeral shell nodes, named per container, go with their sessions).
var allDirs = []string{TopologiesDir, PackingPlansDir, ExecutionStateDir, PhysicalPlansDir, TManagersDir, SchedulersDir, LocksDir, CheckpointsDir, SecretsDir, HealthDir}

// Path returns the node of a topology in dir.
func Path(dir, topologyName string) string { return dir + "/" + topologyName }

// Store reads and writes the node tree through a state manager session.
type Store struct {
	sm spi.StateManager
}

// New wraps a state manager session.
func New(sm spi.StateManager) *Store { return &Store{sm: sm} }

// StateManager returns the underlying session.
func (s *Store) StateManager() spi.StateManager { return s.sm }

// Submission is what submit writes.
type Submission struct {
	Topology       *topology.Topology
	Plan           *plan.PackingPlan
	ExecutionState *egretpb.ExecutionState
	// Secret, when set, is written to /secrets/<name> with the rest.
	Secret []byte
	// Checkpoint, when set, is written to /checkpoints/<name> with the
	// rest: the topology starts from that complete checkpoint (a
	// savepoint copied into its checkpoint storage).
	Checkpoint *egretpb.CheckpointState
}

// Submit writes the topology, its packing plan and its execution state in
// one atomic operation. It fails with an error wrapping spi.ErrExists when
// a topology with the name is already submitted, and then writes nothing.
func (s *Store) Submit(ctx context.Context, sub Submission) error {
	name := sub.Topology.Name
	tb, err := topology.Marshal(sub.Topology)
	if err != nil {
		return err
	}
	pb, err := sub.Plan.Marshal()
	if err != nil {
		return fmt.Errorf("encode packing plan of %q: %w", name, err)
	}
	eb, err := marshal(sub.ExecutionState)
	if err != nil {
		return err
	}
	ops := []spi.Op{
		{Kind: spi.OpCreate, Path: Path(TopologiesDir, name), Data: tb},
		{Kind: spi.OpCreate, Path: Path(PackingPlansDir, name), Data: pb},
		{Kind: spi.OpCreate, Path: Path(ExecutionStateDir, name), Data: eb},
	}
	if len(sub.Secret) > 0 {
		sb, err := marshal(&egretpb.TopologySecret{TopologyName: name, Secret: sub.Secret})
		if err != nil {
			return err
		}
		ops = append(ops, spi.Op{Kind: spi.OpCreate, Path: Path(SecretsDir, name), Data: sb})
	}
	if sub.Checkpoint != nil {
		cb, err := marshal(sub.Checkpoint)
		if err != nil {
			return err
		}
		ops = append(ops, spi.Op{Kind: spi.OpCreate, Path: Path(CheckpointsDir, name), Data: cb})
	}
	err = s.sm.Multi(ctx, ops...)
	if errors.Is(err, spi.ErrExists) {
		return fmt.Errorf("topology %q is already running (kill it first, or choose another name): %w", name, err)
	}
	if err != nil {
		return fmt.Errorf("write state of topology %q: %w", name, err)
	}
	return nil
}

// Kill deletes every node of the topology in one atomic operation, except
// its lock, which the killer holds and releases. Nodes that do not exist
// are skipped and corrupt ones deleted, so Kill is idempotent and also
// cleans a half-written or damaged topology.
func (s *Store) Kill(ctx context.Context, name string) error {
	var ops []spi.Op
	for _, dir := range allDirs {
		if dir != LocksDir {
			ops = append(ops, spi.Op{Kind: spi.OpDelete, Path: Path(dir, name), Version: spi.AnyVersion})
		}
	}
	if err := s.sm.Multi(ctx, ops...); err != nil {
		return fmt.Errorf("delete state of topology %q: %w", name, err)
	}
	return nil
}

// Topologies lists the submitted topologies.
func (s *Store) Topologies(ctx context.Context) ([]string, error) {
	names, err := s.sm.Children(ctx, TopologiesDir)
	if errors.Is(err, spi.ErrNotFound) {
		return nil, nil
	}
	return names, err
}

// persistentDirs hold the nodes that outlive every process of a
// topology; a name with a node in any of them is taken.
var persistentDirs = []string{TopologiesDir, PackingPlansDir, ExecutionStateDir, PhysicalPlansDir, CheckpointsDir, SecretsDir}

// Names lists every topology with a persistent node: the submitted ones and
// what a failed or interrupted submit or kill left behind (see Present).
func (s *Store) Names(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, dir := range persistentDirs {
		names, err := s.sm.Children(ctx, dir)
		if errors.Is(err, spi.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", dir, err)
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// Present returns the persistent nodes a topology has (readable or not).
func (s *Store) Present(ctx context.Context, name string) ([]string, error) {
	var out []string
	for _, dir := range persistentDirs {
		_, err := s.sm.Get(ctx, Path(dir, name))
		switch {
		case err == nil, errors.Is(err, spi.ErrCorrupt):
			out = append(out, Path(dir, name))
		case !errors.Is(err, spi.ErrNotFound):
			return nil, fmt.Errorf("read %s: %w", Path(dir, name), err)
		}
	}
	return out, nil
}

// Topology reads a topology definition.
func (s *Store) Topology(ctx context.Context, name string) (*topology.Topology, error) {
	n, err := s.get(ctx, TopologiesDir, name)
	if err != nil {
		return nil, err
	}
	t, err := topology.Unmarshal(n.Data)
	if err == nil && t.Name != name {
		err = fmt.Errorf("it holds the definition of topology %q", t.Name)
	}
	if err == nil && len(t.Components) == 0 {
		err = errors.New("it holds a definition without components")
	}
	if err != nil {
		return nil, corrupt(TopologiesDir, name, err)
	}
	return t, nil
}

// PackingPlan reads a packing plan and its node version.
func (s *Store) PackingPlan(ctx context.Context, name string) (*plan.PackingPlan, int64, error) {
	n, err := s.get(ctx, PackingPlansDir, name)
	if err != nil {
		return nil, 0, err
	}
	p, err := plan.Unmarshal(n.Data)
	if err == nil {
		err = checkPlan(p)
	}
	if err != nil {
		return nil, 0, corrupt(PackingPlansDir, name, err)
	}
	return p, n.Version, nil
}

// checkPlan is what every packing plan satisfies, whatever its topology:
// it has containers with distinct ids >= 1, holding instances of named
// components.
func checkPlan(p *plan.PackingPlan) error {
	if len(p.Containers) == 0 {
		return errors.New("it holds no packing plan (no containers)")
	}
	seen := map[int]bool{}
	for _, c := range p.Containers {
		if c.ID < 1 || seen[c.ID] {
			return fmt.Errorf("container id %d is invalid (ids start at 1 and are distinct)", c.ID)
		}
		seen[c.ID] = true
		for _, in := range c.Instances {
			if in.Component == "" {
				return fmt.Errorf("container %d has an instance without a component", c.ID)
			}
		}
	}
	return nil
}

// UpdatePackingPlan replaces the packing plan if its version is still
// version (spi.AnyVersion: unconditionally), together with the topology
// definition (whose parallelism changes with the plan).
func (s *Store) UpdatePackingPlan(ctx context.Context, t *topology.Topology, p *plan.PackingPlan, version int64) error {
	tb, err := topology.Marshal(t)
	if err != nil {
		return err
	}
	pb, err := p.Marshal()
	if err != nil {
		return err
	}
	return s.sm.Multi(ctx,
		spi.Op{Kind: spi.OpSet, Path: Path(PackingPlansDir, t.Name), Data: pb, Version: version},
		spi.Op{Kind: spi.OpSet, Path: Path(TopologiesDir, t.Name), Data: tb, Version: spi.AnyVersion},
	)
}

// ExecutionState reads a topology's execution state.
func (s *Store) ExecutionState(ctx context.Context, name string) (*egretpb.ExecutionState, error) {
	var es egretpb.ExecutionState
	return &es, s.getProto(ctx, ExecutionStateDir, name, &es, func() string {
		if es.GetTopologyId() == "" {
			return "" // every submit records the id
		}
		return es.GetTopologyName()
	})
}

// SetExecutionState overwrites a topology's execution state (egret
// upgrade records the package of each container there).
func (s *Store) SetExecutionState(ctx context.Context, name string, es *egretpb.ExecutionState) error {
	if es.GetTopologyName() != name {
		return fmt.Errorf("write the execution state of %q: it names topology %q", name, es.GetTopologyName())
	}
	return s.put(ctx, ExecutionStateDir, name, es, false)
}

// ContainerPackage returns the package container c of a topology runs: its
// entry in container_packages, else the package of the latest upgrade,
// else the submitted package.
func ContainerPackage(es *egretpb.ExecutionState, c int) *egretpb.PackageRef {
	if ref, ok := es.GetContainerPackages()[int32(c)]; ok && ref.GetUri() != "" {
		return ref
	}
	return TopologyPackage(es)
}

// TopologyPackage returns the package of the latest upgrade, else the
// submitted package: what a container without its own entry runs.
func TopologyPackage(es *egretpb.ExecutionState) *egretpb.PackageRef {
	if ref := es.GetCurrentPackage(); ref.GetUri() != "" {
		return ref
	}
	return &egretpb.PackageRef{Uri: es.GetPackageUri(), Sha256: es.GetPackageSha256(), BinarySha256: es.GetPackageBinarySha256()}
}

// PhysicalPlan reads a topology's physical plan.
func (s *Store) PhysicalPlan(ctx context.Context, name string) (*egretpb.PhysicalPlan, error) {
	var pp egretpb.PhysicalPlan
	return &pp, s.getProto(ctx, PhysicalPlansDir, name, &pp, func() string { return pp.GetTopology().GetName() })
}

// SetPhysicalPlan creates or overwrites a topology's physical plan.
func (s *Store) SetPhysicalPlan(ctx context.Context, name string, pp *egretpb.PhysicalPlan) error {
	return s.put(ctx, PhysicalPlansDir, name, pp, false)
}

// TManagerLocation reads where a topology's topology manager listens.
func (s *Store) TManagerLocation(ctx context.Context, name string) (*egretpb.TManagerLocation, error) {
	var loc egretpb.TManagerLocation
	return &loc, s.getProto(ctx, TManagersDir, name, &loc, loc.GetTopologyName)
}

// RegisterTManager creates the topology manager's ephemeral node. It fails
// with an error wrapping spi.ErrExists while another topology manager's
// session holds the node.
func (s *Store) RegisterTManager(ctx context.Context, loc *egretpb.TManagerLocation) error {
	b, err := marshal(loc)
	if err != nil {
		return err
	}
	if err := s.sm.Create(ctx, Path(TManagersDir, loc.GetTopologyName()), b, true); err != nil {
		return fmt.Errorf("register topology manager of %q: %w", loc.GetTopologyName(), err)
	}
	return nil
}

// SchedulerLocation reads a topology's scheduler location.
func (s *Store) SchedulerLocation(ctx context.Context, name string) (*egretpb.SchedulerLocation, error) {
	var loc egretpb.SchedulerLocation
	return &loc, s.getProto(ctx, SchedulersDir, name, &loc, loc.GetTopologyName)
}

// SetSchedulerLocation writes a topology's scheduler location; ephemeral
// for service-mode schedulers, whose node must vanish with them.
func (s *Store) SetSchedulerLocation(ctx context.Context, loc *egretpb.SchedulerLocation, ephemeral bool) error {
	return s.put(ctx, SchedulersDir, loc.GetTopologyName(), loc, ephemeral)
}

// Lock takes a topology's update lock.
func (s *Store) Lock(ctx context.Context, name string) (func() error, error) {
	unlock, err := s.sm.Lock(ctx, Path(LocksDir, name))
	if err != nil {
		return nil, fmt.Errorf("lock topology %q: %w", name, err)
	}
	return unlock, nil
}

// Watch reports changes of a topology's node in dir.
func (s *Store) Watch(ctx context.Context, dir, name string) (<-chan spi.Event, error) {
	return s.sm.Watch(ctx, Path(dir, name))
}

func (s *Store) get(ctx context.Context, dir, name string) (spi.Node, error) {
	n, err := s.sm.Get(ctx, Path(dir, name))
	if errors.Is(err, spi.ErrCorrupt) {
		return n, corrupt(dir, name, err)
	}
	if err != nil {
		return n, fmt.Errorf("read %s: %w", Path(dir, name), err)
	}
	return n, nil
}

// getProto reads a node into m and checks that owner(), the topology name
// m carries, is name: bytes of another message type usually decode
// without error, but not into a message that names the topology.
func (s *Store) getProto(ctx context.Context, dir, name string, m proto.Message, owner func() string) error {
	n, err := s.get(ctx, dir, name)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(n.Data, m); err != nil {
		return corrupt(dir, name, err)
	}
	if got := owner(); got != name {
		return corrupt(dir, name, fmt.Errorf("it holds no %s of topology %q (found %q)", proto.MessageName(m).Name(), name, got))
	}
	return nil
}

// CorruptError is the error of a node that exists but does not hold what
// it must: the state manager cannot read it, or its bytes do not decode
// into the node's type for the topology. It wraps spi.ErrCorrupt.
type CorruptError struct {
	Path  string
	Cause error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("state node %s is corrupt: %v", e.Path, e.Cause)
}

// Unwrap returns spi.ErrCorrupt and the cause.
func (e *CorruptError) Unwrap() []error { return []error{spi.ErrCorrupt, e.Cause} }

func corrupt(dir, name string, cause error) error {
	return &CorruptError{Path: Path(dir, name), Cause: cause}
}

func (s *Store) put(ctx context.Context, dir, name string, m proto.Message, ephemeral bool) error {
	b, err := marshal(m)
	if err != nil {
		return err
	}
	p := Path(dir, name)
	if ephemeral {
		if err := s.sm.Delete(ctx, p, spi.AnyVersion); err != nil {
			return fmt.Errorf("replace %s: %w", p, err)
		}
		if err := s.sm.Create(ctx, p, b, true); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		return nil
	}
	_, err = s.sm.Set(ctx, p, b, spi.AnyVersion)
	if errors.Is(err, spi.ErrNotFound) {
		err = s.sm.Create(ctx, p, b, false)
		if errors.Is(err, spi.ErrExists) { // lost a race with another writer: overwrite
			_, err = s.sm.Set(ctx, p, b, spi.AnyVersion)
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

func marshal(m proto.Message) ([]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", proto.MessageName(m), err)
	}
	return b, nil
}

// CheckpointState reads the effectively-once checkpoint state of a
// topology (spi.ErrNotFound before its first checkpoint or restore).
func (s *Store) CheckpointState(ctx context.Context, name string) (*egretpb.CheckpointState, error) {
	var cs egretpb.CheckpointState
	return &cs, s.getProto(ctx, CheckpointsDir, name, &cs, cs.GetTopologyName)
}

// SetCheckpointState creates or overwrites the checkpoint state.
func (s *Store) SetCheckpointState(ctx context.Context, name string, cs *egretpb.CheckpointState) error {
	return s.put(ctx, CheckpointsDir, name, cs, false)
}

// HealthDecisions reads the decisions of a topology's health manager
// (spi.ErrNotFound before its first decision).
func (s *Store) HealthDecisions(ctx context.Context, name string) (*egretpb.HealthDecisions, error) {
	var hd egretpb.HealthDecisions
	return &hd, s.getProto(ctx, HealthDir, name, &hd, hd.GetTopologyName)
}

// SetHealthDecisions creates or overwrites the health manager's decisions.
func (s *Store) SetHealthDecisions(ctx context.Context, name string, hd *egretpb.HealthDecisions) error {
	return s.put(ctx, HealthDir, name, hd, false)
}
