package scale

import (
	"context"
	"errors"
	"fmt"

	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/bench/harness"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/stmgr"
	"github.com/egret-stream/egret/proto/egretpb"
)

// MeshResult is what Mesh measured of N real stream managers.
type MeshResult struct {
	Containers int    `json:"containers"`
	LoadAvg    string `json:"loadavg"`
	// MeshUp is the last registration sent until every stream manager
	// holds the plan and is connected to every peer.
	MeshUp time.Duration `json:"mesh_up"`
	// PeersPerStmgr is each stream manager's outgoing peer connections
	// (Counters().PeersConnected); SocketsPerStmgr the process's sockets
	// divided by N (every peer connection has both ends here); HeapPerStmgr
	// the Go heap in use divided by N, GoroutinesPerStmgr likewise.
	PeersPerStmgr      int     `json:"peers_per_stmgr"`
	SocketsPerStmgr    float64 `json:"sockets_per_stmgr"`
	HeapPerStmgr       int64   `json:"heap_per_stmgr_bytes"`
	GoroutinesPerStmgr float64 `json:"goroutines_per_stmgr"`
	// IdleCores is the CPU all N idle stream managers use together (the
	// process's, over IdleWindow once the mesh is up): no instances, no
	// tuples, only the control traffic of the mesh.
	IdleCores  float64       `json:"idle_cores"`
	IdleWindow time.Duration `json:"idle_window"`
	// Announcements is how many back-pressure frames the counting peer
	// (container N+1) received from the N idle stream managers during
	// IdleWindow.
	Announcements int64 `json:"announcements"`
}

// staticFinder hands the stream managers the child's address.
type staticFinder struct{ loc *egretpb.TManagerLocation }

func (f staticFinder) TManagerLocation(context.Context, string) (*egretpb.TManagerLocation, error) {
	return f.loc, nil
}

func (f staticFinder) WatchTManager(ctx context.Context, _ string) (<-chan spi.Event, error) {
	ch := make(chan spi.Event)
	go func() {
		<-ctx.Done()
		close(ch)
	}()
	return ch, nil
}

// Mesh runs one real topology manager, cfg.Containers real stream
// managers (daemons/stmgr, no instances, all in this process) and one
// more container whose stand-in stream manager's data port counts what
// the others send it, and measures the full mesh they build. Each peer connection holds two
// sockets of this process, so N is bounded by the file-descriptor limit
// (2N² sockets).
func Mesh(ctx context.Context, cfg Config) (*MeshResult, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	n := cfg.Containers
	res := &MeshResult{Containers: n, LoadAvg: harness.DescribeMachine().LoadAvg}
	root := filepath.Join(cfg.Dir, "state")
	all := cfg
	all.Containers = n + 1
	if err := submit(ctx, root, all); err != nil {
		return nil, err
	}
	ch, err := startChild(ctx, cfg.Self, childSpec{Root: root, Name: topologyName, ID: topologyID, Log: filepath.Join(cfg.Dir, "tmanager.log"),
		Settings: map[string]string{}}, cfg.Deadline)
	if err != nil {
		return nil, err
	}
	defer ch.stop()
	host, port, err := net.SplitHostPort(ch.serverAddr)
	if err != nil {
		return nil, err
	}
	p, _ := strconv.Atoi(port)
	finder := staticFinder{&egretpb.TManagerLocation{TopologyName: topologyName, TopologyId: topologyID, Host: host, ServerPort: int32(p)}}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	sockBefore, g0 := countSockets(os.Getpid()), runtime.NumGoroutine()

	peer, err := newCountingPeer(topologyID)
	if err != nil {
		return nil, err
	}
	defer peer.close()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	last := newStandin(topologyID, int32(n+1), peer.port(), []int32{int32(2*n + 1), int32(2*n + 2)}, time.Second)
	go last.run(ch.serverAddr)
	defer func() {
		last.close()
		last.wait()
	}()
	sms := make([]*stmgr.StMgr, 0, n)
	for c := 1; c <= n; c++ {
		sm, err := stmgr.New(stmgr.Config{TopologyName: topologyName, TopologyID: topologyID, Container: c,
			Socket: filepath.Join(cfg.Dir, fmt.Sprintf("s%d.sock", c)), BindHost: "127.0.0.1", Host: "127.0.0.1",
			TManager: finder, Settings: spi.Config{}}, zap.NewNop())
		if err != nil {
			return nil, fmt.Errorf("stream manager %d: %w", c, err)
		}
		sms = append(sms, sm)
	}
	start := time.Now()
	errc := make(chan error, n)
	for _, sm := range sms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sm.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errc <- err
			}
		}()
	}
	deadline := time.Now().Add(cfg.Deadline)
	for {
		ready := 0
		for _, sm := range sms {
			c := sm.Counters()
			if c.PlanVersion > 0 && c.PeersConnected == n {
				ready++
			}
		}
		if ready == n {
			break
		}
		select {
		case err := <-errc:
			return nil, fmt.Errorf("a stream manager failed: %w", err)
		case <-ch.exited:
			return nil, fmt.Errorf("%w: %v", errChildExited, ch.err)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d stream managers hold the plan and every peer connection after %s", ready, n, cfg.Deadline)
		}
	}
	res.MeshUp = time.Since(start)
	res.PeersPerStmgr = sms[0].Counters().PeersConnected
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	res.SocketsPerStmgr = float64(countSockets(os.Getpid())-sockBefore) / float64(n)
	res.HeapPerStmgr = (int64(after.HeapInuse) - int64(before.HeapInuse)) / int64(n)
	res.GoroutinesPerStmgr = float64(runtime.NumGoroutine()-g0) / float64(n)
	ann0 := peer.announcements.Load()
	before0, err := harness.ReadProc(os.Getpid())
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	select {
	case <-time.After(cfg.Steady):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	after0, err := harness.ReadProc(os.Getpid())
	if err != nil {
		return nil, err
	}
	res.IdleWindow = time.Since(t0)
	res.Announcements = peer.announcements.Load() - ann0
	res.IdleCores = (after0.CPUSeconds - before0.CPUSeconds) / res.IdleWindow.Seconds()
	fmt.Fprintf(cfg.Log, "mesh N=%d: up in %s; per stream manager %d peers, %.1f sockets, %d KiB heap, %.0f goroutines; idle, all together %.3f cores, %d back-pressure announcements to one peer in %s\n",
		n, res.MeshUp, res.PeersPerStmgr, res.SocketsPerStmgr, res.HeapPerStmgr>>10, res.GoroutinesPerStmgr, res.IdleCores, res.Announcements, res.IdleWindow.Round(time.Millisecond))
	return res, nil
}
