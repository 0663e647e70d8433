package state_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/statemgr/memory"
)

func testTopology(name string) *topology.Topology {
	return &topology.Topology{Name: name, ID: name + "-1", Components: []topology.Component{
		{Name: "spout", Kind: topology.Spout, Parallelism: 1, Outputs: []topology.Stream{{ID: topology.DefaultStream, Fields: []string{"x"}}}},
	}}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNodesOfAnotherTopologyOrEmpty: bytes that decode without error but
// are not the node's (another topology's node copied over it, an empty
// node) are reported as corrupt, naming the node, by every reader.
func TestNodesOfAnotherTopologyOrEmpty(t *testing.T) {
	other := testTopology("other")
	otherDef, err := topology.Marshal(other)
	if err != nil {
		t.Fatal(err)
	}
	otherPlan, err := plan.SingleContainer(other).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]func(s *state.Store) error{
		state.TopologiesDir: func(s *state.Store) error { _, err := s.Topology(context.Background(), "wc"); return err },
		state.PackingPlansDir: func(s *state.Store) error {
			_, _, err := s.PackingPlan(context.Background(), "wc")
			return err
		},
		state.ExecutionStateDir: func(s *state.Store) error { _, err := s.ExecutionState(context.Background(), "wc"); return err },
		state.PhysicalPlansDir:  func(s *state.Store) error { _, err := s.PhysicalPlan(context.Background(), "wc"); return err },
		state.TManagersDir:      func(s *state.Store) error { _, err := s.TManagerLocation(context.Background(), "wc"); return err },
		state.SchedulersDir:     func(s *state.Store) error { _, err := s.SchedulerLocation(context.Background(), "wc"); return err },
	}
	for _, tc := range []struct {
		name, dir string
		data      []byte
	}{
		{"definition of another topology", state.TopologiesDir, otherDef},
		{"empty definition", state.TopologiesDir, mustMarshal(t, &egretpb.Topology{Name: "wc", FormatVersion: topology.FormatVersion})},
		{"empty packing plan", state.PackingPlansDir, nil},
		{"packing plan without containers", state.PackingPlansDir, mustMarshal(t, &egretpb.PackingPlan{TopologyId: "wc-1"})},
		{"packing plan with container 0", state.PackingPlansDir, mustMarshal(t, &egretpb.PackingPlan{TopologyId: "wc-1", Containers: []*egretpb.ContainerPlan{{Id: 0, Instances: []*egretpb.InstancePlan{{Component: "spout"}}}}})},
		{"execution state of another topology", state.ExecutionStateDir, mustMarshal(t, &egretpb.ExecutionState{TopologyName: "other", TopologyId: "other-1"})},
		{"execution state without an id", state.ExecutionStateDir, mustMarshal(t, &egretpb.ExecutionState{TopologyName: "wc"})},
		{"scheduler location as execution state", state.ExecutionStateDir, mustMarshal(t, &egretpb.SchedulerLocation{TopologyName: "other", HttpEndpoint: "http://x"})},
		{"physical plan of another topology", state.PhysicalPlansDir, mustMarshal(t, &egretpb.PhysicalPlan{Topology: topology.ToProto(other), Packing: plan.SingleContainer(other).ToProto()})},
		{"empty physical plan", state.PhysicalPlansDir, nil},
		{"packing plan as physical plan", state.PhysicalPlansDir, otherPlan},
		{"topology manager of another topology", state.TManagersDir, mustMarshal(t, &egretpb.TManagerLocation{TopologyName: "other"})},
		{"scheduler of another topology", state.SchedulersDir, mustMarshal(t, &egretpb.SchedulerLocation{TopologyName: "other"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sm := memory.NewStore().NewSession()
			defer sm.Close()
			if err := sm.Create(context.Background(), state.Path(tc.dir, "wc"), tc.data, false); err != nil {
				t.Fatal(err)
			}
			err := read[tc.dir](state.New(sm))
			var ce *state.CorruptError
			if !errors.Is(err, spi.ErrCorrupt) || !errors.As(err, &ce) || ce.Path != state.Path(tc.dir, "wc") {
				t.Fatalf("read: %v; want a *state.CorruptError for %s wrapping spi.ErrCorrupt", err, state.Path(tc.dir, "wc"))
			}
			if !strings.HasPrefix(err.Error(), "state node "+state.Path(tc.dir, "wc")+" is corrupt: ") {
				t.Errorf("error %q does not start by naming the node", err)
			}
		})
	}
}

// TestNamesAndPresent: a topology with only some of its nodes is listed
// and its nodes are found; Kill removes them all but leaves a held lock.
func TestNamesAndPresent(t *testing.T) {
	ctx := context.Background()
	sm := memory.NewStore().NewSession()
	defer sm.Close()
	s := state.New(sm)
	tp := testTopology("full")
	es := &egretpb.ExecutionState{TopologyName: "full", TopologyId: tp.ID}
	if err := s.Submit(ctx, state.Submission{Topology: tp, Plan: plan.SingleContainer(tp), ExecutionState: es}); err != nil {
		t.Fatal(err)
	}
	if err := sm.Create(ctx, state.Path(state.PhysicalPlansDir, "leftover"), nil, false); err != nil {
		t.Fatal(err)
	}
	if err := sm.Create(ctx, state.Path(state.PackingPlansDir, "half"), []byte("garbage"), false); err != nil {
		t.Fatal(err)
	}
	names, err := s.Names(ctx)
	if err != nil || strings.Join(names, ",") != "full,half,leftover" {
		t.Fatalf("Names = %v, %v; want full, half, leftover", names, err)
	}
	present, err := s.Present(ctx, "half")
	if err != nil || strings.Join(present, ",") != "/packingplans/half" {
		t.Errorf("Present(half) = %v, %v", present, err)
	}
	unlock, err := s.Lock(ctx, "half")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := s.Kill(ctx, n); err != nil {
			t.Fatalf("Kill(%s): %v", n, err)
		}
	}
	if names, err := s.Names(ctx); err != nil || len(names) != 0 {
		t.Errorf("Names after Kill = %v, %v", names, err)
	}
	if _, err := sm.Get(ctx, state.Path(state.LocksDir, "half")); err != nil {
		t.Errorf("Kill removed the lock its caller holds: %v", err)
	}
	if err := unlock(); err != nil {
		t.Error(err)
	}
}

// TestHealthDecisions: the health manager's record is written, read back,
// and deleted by Kill with the rest of the topology.
func TestHealthDecisions(t *testing.T) {
	ctx := context.Background()
	s := state.New(memory.NewStore().NewSession())
	if _, err := s.HealthDecisions(ctx, "t"); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("before any decision: %v, want ErrNotFound", err)
	}
	hd := &egretpb.HealthDecisions{TopologyName: "t", TopologyId: "t-1", Decisions: []*egretpb.HealthDecision{{Component: "b", Action: "scale-up", OldParallelism: 1, NewParallelism: 2}}}
	if err := s.SetHealthDecisions(ctx, "t", hd); err != nil {
		t.Fatal(err)
	}
	got, err := s.HealthDecisions(ctx, "t")
	if err != nil || !proto.Equal(got, hd) {
		t.Fatalf("read back %v, %v; want %v", got, err, hd)
	}
	if err := s.Kill(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.HealthDecisions(ctx, "t"); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("after Kill: %v, want ErrNotFound", err)
	}
}
