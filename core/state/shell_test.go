package state_test

import (
	"context"
	"errors"
	"testing"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/statemgr/memory"
)

func TestSecretWrittenAtSubmitDeletedAtKill(t *testing.T) {
	ctx := context.Background()
	s := state.New(memory.NewStore().NewSession())
	tp := testTopology("wc")
	secret := []byte("0123456789abcdef")
	if err := s.Submit(ctx, state.Submission{Topology: tp, Plan: plan.SingleContainer(tp), ExecutionState: &egretpb.ExecutionState{TopologyName: "wc", TopologyId: "wc-1"}, Secret: secret}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Secret(ctx, "wc")
	if err != nil || string(got) != string(secret) {
		t.Fatalf("Secret = %q, %v", got, err)
	}
	if err := s.Kill(ctx, "wc"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Secret(ctx, "wc"); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("Secret after kill = %v, want ErrNotFound", err)
	}
	// A secret left alone (state edited by hand) makes the name taken
	// and listed, so that kill removes it.
	if err := s.StateManager().Create(ctx, state.Path(state.SecretsDir, "wc"), mustMarshal(t, &egretpb.TopologySecret{TopologyName: "wc", Secret: secret}), false); err != nil {
		t.Fatal(err)
	}
	if names, err := s.Names(ctx); err != nil || len(names) != 1 || names[0] != "wc" {
		t.Errorf("Names with a lone secret = %v, %v", names, err)
	}
	if p, err := s.Present(ctx, "wc"); err != nil || len(p) != 1 || p[0] != "/secrets/wc" {
		t.Errorf("Present with a lone secret = %v, %v", p, err)
	}
}

func TestShellLocations(t *testing.T) {
	ctx := context.Background()
	ms := memory.NewStore()
	shellSession := ms.NewSession()
	s, reader := state.New(shellSession), state.New(ms.NewSession())
	for _, c := range []int{0, 2} {
		if err := s.SetShellLocation(ctx, &egretpb.ShellLocation{TopologyName: "wc", Container: int32(c), Host: "h", Port: int32(9000 + c)}); err != nil {
			t.Fatal(err)
		}
	}
	// Another topology whose name extends this one's.
	if err := s.SetShellLocation(ctx, &egretpb.ShellLocation{TopologyName: "wc2", Container: 1, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	// A second write (a restarted shell) replaces the node.
	if err := s.SetShellLocation(ctx, &egretpb.ShellLocation{TopologyName: "wc", Container: 2, Host: "h", Port: 9999}); err != nil {
		t.Fatal(err)
	}
	loc, err := reader.ShellLocation(ctx, "wc", 2)
	if err != nil || loc.GetPort() != 9999 {
		t.Fatalf("ShellLocation = %v, %v", loc, err)
	}
	cs, err := reader.ShellContainers(ctx, "wc")
	if err != nil || len(cs) != 2 || cs[0] != 0 || cs[1] != 2 {
		t.Errorf("ShellContainers = %v, %v", cs, err)
	}
	if _, err := reader.ShellLocation(ctx, "wc", 1); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("ShellLocation of a container without a shell = %v", err)
	}
	if _, err := reader.ShellLocation(ctx, "../x", 1); err == nil {
		t.Error("ShellLocation accepted a hostile topology name")
	}
	if err := s.SetShellLocation(ctx, &egretpb.ShellLocation{TopologyName: "a.b", Container: 1}); err == nil {
		t.Error("SetShellLocation accepted a topology name with a dot")
	}
	// Another topology's location copied over the node is corrupt.
	if err := shellSession.Delete(ctx, state.Path(state.ShellsDir, state.ShellNode("wc", 0)), spi.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := shellSession.Create(ctx, state.Path(state.ShellsDir, state.ShellNode("wc", 0)), mustMarshal(t, &egretpb.ShellLocation{TopologyName: "wc2", Container: 1}), true); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.ShellLocation(ctx, "wc", 0); !errors.Is(err, spi.ErrCorrupt) {
		t.Errorf("ShellLocation of a node holding another's = %v, want ErrCorrupt", err)
	}
	// Ephemeral: the nodes go with the shell's session.
	if err := shellSession.Close(); err != nil {
		t.Fatal(err)
	}
	if cs, err := reader.ShellContainers(ctx, "wc"); err != nil || len(cs) != 0 {
		t.Errorf("ShellContainers after the session closed = %v, %v", cs, err)
	}
}
