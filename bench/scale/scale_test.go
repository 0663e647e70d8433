package scale

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

func TestMain(m *testing.M) {
	ChildMain()
	os.Exit(m.Run())
}

// testLog writes progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestFiftyContainers is the regression check of make test (correctness,
// not timing): a real topology manager and 50 stand-in stream managers;
// every container gets the plan; a frozen one is evicted and its
// replacement reaches every container's plan. Run fails on any of these
// within its generous deadline.
func TestFiftyContainers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{
		Containers: 50, Kill: true, SkipSteady: true,
		HeartbeatInterval: 500 * time.Millisecond, HeartbeatTimeout: 3 * time.Second,
		MetricsInterval: time.Second, Deadline: 2 * time.Minute,
		Dir: t.TempDir(), Log: testLog{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Its last heartbeat went out at most one interval before it froze.
	if res.Detect < 3*time.Second-500*time.Millisecond {
		t.Errorf("the frozen container was dropped %s after it went silent, before the heartbeat timeout (3s)", res.Detect)
	}
	if res.PlanBytes == 0 || res.HTTPBytes["/stats"] == 0 {
		t.Errorf("no plan or stats measured: %+v", res)
	}
	t.Logf("plan %d bytes, at every container %s after the last registration; re-plan %s; reconnects %d", res.PlanBytes, res.PlanAll, res.Replan, res.Reconnects)
}

// TestFiftyContainersCheckpoint: under effectively-once every container
// restores, then checkpoints complete at every container.
func TestFiftyContainersCheckpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{
		Containers: 50, EffectivelyOnce: true, Checkpoints: 2, CheckpointInterval: 500 * time.Millisecond,
		MetricsInterval: time.Second, Deadline: 2 * time.Minute,
		Dir: t.TempDir(), Log: testLog{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Checkpoints) != 2 {
		t.Fatalf("measured %d checkpoints, want 2", len(res.Checkpoints))
	}
}

// TestScanPlan: the stand-ins' partial decoding reads what a full decode
// of the same frames reads.
func TestScanPlan(t *testing.T) {
	pp := &egretpb.PhysicalPlan{Version: 7, Topology: &egretpb.Topology{Name: "x", Id: "x-1"},
		Stmgrs: []*egretpb.StMgrLocation{{Container: 1, Host: "h", DataPort: 4001, MetricsPort: 9}, {Container: 2, Host: "h", DataPort: 4002}}}
	for _, m := range []proto.Message{&egretpb.NewPhysicalPlan{Pplan: pp}, &egretpb.StMgrRegisterResponse{Pplan: pp}} {
		b, err := wire.AppendMessage(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		s := newStandin("x-1", 1, 4001, nil, time.Second)
		s.watch.Store(&watchSpec{container: 2, port: 4002})
		if err := s.handle(wire.FrameType(b[4]), b[wire.HeaderSize:], 42); err != nil {
			t.Fatal(err)
		}
		if s.version.Load() != 7 || s.firstPlanAt.Load() != 42 || s.watch.Load().at.Load() != 42 {
			t.Errorf("%T: version %d, first plan at %d, watch at %d; want 7, 42, 42", m, s.version.Load(), s.firstPlanAt.Load(), s.watch.Load().at.Load())
		}
	}
	b, _ := wire.AppendMessage(nil, &egretpb.StMgrRegisterResponse{Error: "no such container"})
	s := newStandin("x-1", 1, 4001, nil, time.Second)
	if err := s.handle(wire.FrameType(b[4]), b[wire.HeaderSize:], 1); err == nil || s.err.Load() == nil {
		t.Errorf("a refused registration was not reported: %v", err)
	}
}

// TestMeshOfFour: four real stream managers register with the real
// topology manager, get the plan and connect to every peer, the counting
// stand-in peer included; idle, they re-send it no back-pressure state
// (at most the one each sends when it connects, if it arrives late).
func TestMeshOfFour(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Mesh(ctx, Config{Containers: 4, Steady: 3500 * time.Millisecond, Deadline: 2 * time.Minute, Dir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if res.PeersPerStmgr != 4 {
		t.Errorf("a stream manager has %d peer connections, want 4", res.PeersPerStmgr)
	}
	// With the default 1 s interval a re-sent idle state would be about
	// 3 per stream manager in the window.
	if res.Announcements > 4 {
		t.Errorf("idle stream managers sent the counting peer %d back-pressure announcements in %s; want at most 4 (one each on connecting)", res.Announcements, res.IdleWindow)
	}
}
