package state

import (
	"context"
	"errors"
	"fmt"

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
)

var allDirs = []string{TopologiesDir, PackingPlansDir, ExecutionStateDir, PhysicalPlansDir, TManagersDir, SchedulersDir, LocksDir, CheckpointsDir}

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
	err = s.sm.Multi(ctx,
		spi.Op{Kind: spi.OpCreate, Path: Path(TopologiesDir, name), Data: tb},
		spi.Op{Kind: spi.OpCreate, Path: Path(PackingPlansDir, name), Data: pb},
		spi.Op{Kind: spi.OpCreate, Path: Path(ExecutionStateDir, name), Data: eb},
	)
	if errors.Is(err, spi.ErrExists) {
		return fmt.Errorf("topology %q is already running (kill it first, or choose another name): %w", name, err)
	}
	if err != nil {
		return fmt.Errorf("write state of topology %q: %w", name, err)
	}
	return nil
}

// Kill deletes every node of the topology in one atomic operation. Nodes
// that do not exist are skipped, so Kill is idempotent and also cleans a
// half-written topology.
func (s *Store) Kill(ctx context.Context, name string) error {
	var ops []spi.Op
	for _, dir := range allDirs {
		ops = append(ops, spi.Op{Kind: spi.OpDelete, Path: Path(dir, name), Version: spi.AnyVersion})
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

// Topology reads a topology definition.
func (s *Store) Topology(ctx context.Context, name string) (*topology.Topology, error) {
	n, err := s.get(ctx, TopologiesDir, name)
	if err != nil {
		return nil, err
	}
	return topology.Unmarshal(n.Data)
}

// PackingPlan reads a packing plan and its node version.
func (s *Store) PackingPlan(ctx context.Context, name string) (*plan.PackingPlan, int64, error) {
	n, err := s.get(ctx, PackingPlansDir, name)
	if err != nil {
		return nil, 0, err
	}
	p, err := plan.Unmarshal(n.Data)
	return p, n.Version, err
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
	return &es, s.getProto(ctx, ExecutionStateDir, name, &es)
}

// PhysicalPlan reads a topology's physical plan.
func (s *Store) PhysicalPlan(ctx context.Context, name string) (*egretpb.PhysicalPlan, error) {
	var pp egretpb.PhysicalPlan
	return &pp, s.getProto(ctx, PhysicalPlansDir, name, &pp)
}

// SetPhysicalPlan creates or overwrites a topology's physical plan.
func (s *Store) SetPhysicalPlan(ctx context.Context, name string, pp *egretpb.PhysicalPlan) error {
	return s.put(ctx, PhysicalPlansDir, name, pp, false)
}

// TManagerLocation reads where a topology's topology manager listens.
func (s *Store) TManagerLocation(ctx context.Context, name string) (*egretpb.TManagerLocation, error) {
	var loc egretpb.TManagerLocation
	return &loc, s.getProto(ctx, TManagersDir, name, &loc)
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
	return &loc, s.getProto(ctx, SchedulersDir, name, &loc)
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
	if err != nil {
		return n, fmt.Errorf("read %s: %w", Path(dir, name), err)
	}
	return n, nil
}

func (s *Store) getProto(ctx context.Context, dir, name string, m proto.Message) error {
	n, err := s.get(ctx, dir, name)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(n.Data, m); err != nil {
		return fmt.Errorf("decode %s: %w", Path(dir, name), err)
	}
	return nil
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
