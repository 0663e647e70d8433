package executor

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/tmlocation"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/statemgr/memory"
)

// The executor of a process-per-container topology mirrors the topology
// manager's location node into the file its container process reads:
// created, changed (a new topology manager) and removed.
func TestMirrorTManager(t *testing.T) {
	src := memory.NewStore().NewSession()
	file := filepath.Join(t.TempDir(), "tmanager-location")
	e := &Executor{cfg: Config{TopologyName: "wc"}, log: zaptest.NewLogger(t)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.mirrorTManager(ctx, src, file) }()
	defer func() { cancel(); <-done }()

	path := state.Path(state.TManagersDir, "wc")
	dst := tmlocation.File{Path: file}
	mirrored := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			loc, err := dst.TManagerLocation(ctx, "wc")
			got := ""
			if err == nil {
				got = loc.GetHost()
			} else if !errors.Is(err, spi.ErrNotFound) {
				t.Fatal(err)
			}
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("mirror holds %q, want %q", got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	node := func(host string) []byte {
		b, err := proto.Marshal(&egretpb.TManagerLocation{TopologyName: "wc", Host: host, ServerPort: 1})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if err := src.Create(ctx, path, node("tm-1"), true); err != nil {
		t.Fatal(err)
	}
	mirrored("tm-1")
	if _, err := src.Set(ctx, path, node("tm-2"), spi.AnyVersion); err != nil {
		t.Fatal(err)
	}
	mirrored("tm-2")
	if err := src.Delete(ctx, path, spi.AnyVersion); err != nil {
		t.Fatal(err)
	}
	mirrored("")
}

func TestContainerProcessArgs(t *testing.T) {
	p := Params{TopologyName: "wc", TopologyID: "wc-1", Container: 2, StmgrPort: 7000,
		Paths: Paths{TopologyBinary: "/w/package/topology", StmgrSocket: "/w/stmgr.sock", MetricsSocket: "/w/m.sock",
			ConfigFile: "/w/c.json", TManagerLocation: "/w/tmanager-location", CkptMgrSocket: "/w/ckpt.sock"}}
	want := []string{"/w/package/topology", "--container-process", "--topology", "wc", "--tasks", "3,5,8", "--container", "2",
		"--topology-id", "wc-1", "--stmgr-socket", "/w/stmgr.sock", "--port", "7000", "--metrics-socket", "/w/m.sock",
		"--config", "/w/c.json", "--tmanager-location", "/w/tmanager-location"}
	if got := ContainerProcessArgs(p, []int{3, 5, 8}, false); !slices.Equal(got, want) {
		t.Errorf("args:\n got %q\nwant %q", got, want)
	}
	if got := ContainerProcessArgs(p, []int{3}, true); !slices.Contains(got, "--ckptmgr-socket") {
		t.Errorf("effectively-once args have no checkpoint manager socket: %q", got)
	}
}

// TestContainerMaxProcs: a container process gets a P per cpu its
// instances need (the padding adds none), at least 1 and at most the
// machine's CPUs; instances without cpu leave GOMAXPROCS unset.
func TestContainerMaxProcs(t *testing.T) {
	for _, tc := range []struct {
		cpu  float64
		cpus int
		want int
	}{
		{1, 2, 1}, // T1: one instance per container
		{3, 2, 2}, // T3: three instances on a 2-CPU machine
		{0.25, 8, 1},
		{2.2, 8, 3},
		{2, 2, 2},
		{1, 0, 1},
		{0, 2, 0},
	} {
		if got := containerMaxProcs(tc.cpu, tc.cpus); got != tc.want {
			t.Errorf("containerMaxProcs(%v, %d) = %d, want %d", tc.cpu, tc.cpus, got, tc.want)
		}
	}
}
