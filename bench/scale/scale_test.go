package scale

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
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
	if res.Detect < 3*time.Second {
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
