package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/tuple"
	"github.com/egret-stream/egret/daemons/instance"
	"github.com/egret-stream/egret/daemons/instance/gateway"
	"github.com/egret-stream/egret/daemons/stmgr/stmgrtest"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

func allInOne(int) int { return 1 }

// TestRescaleFollowedLive: a plan that adds a sink task while tuples
// flow is followed by the running instances without a restart (same
// instance, instance.relayouts = 1); the new task gets its share and
// nothing is lost or duplicated.
func TestRescaleFollowedLive(t *testing.T) { stmgrtest.ForEachTransport(t, testRescaleFollowedLive) }

func testRescaleFollowedLive(t *testing.T, inMemory bool) {
	c := stmgrtest.NewCluster(t, 2, allInOne)
	c.InMemory = inMemory
	c.StartStMgr(1)
	var in []*stmgrtest.Instance
	for task := 1; task <= 3; task++ {
		in = append(in, c.StartInstance(task, 1))
	}
	c.WaitConnected(map[int]int{1: 3})
	c.Count.Limit.Set(2000)
	stmgrtest.WaitFor(t, 20*time.Second, "tuples before the rescale", func() bool { return c.Count.Sink.Total() >= 2000 })
	bigger, err := stmgrtest.NewCounting(stmgrtest.TopologyID, 3)
	if err != nil {
		t.Fatal(err)
	}
	pp := bigger.PhysicalPlan(allInOne)
	newTask := c.StartInstance(4, 1)
	c.TM.SetPacking(pp.GetTopology(), pp.GetPacking())
	stmgrtest.WaitFor(t, 20*time.Second, "the instances to follow the new layout", func() bool {
		for _, r := range in {
			if r.Metrics.Relayouts.Load() != 1 {
				return false
			}
		}
		return newTask.Stats.PlanVersion.Load() == c.TM.Plan().GetVersion()
	})
	c.Count.Limit.Set(6000)
	stmgrtest.WaitFor(t, 20*time.Second, "tuples after the rescale", func() bool { return c.Count.Sink.Total() >= 6000 })
	if err := c.Count.Sink.CheckExactlyOnce(0, 6000); err != nil {
		t.Fatal(err)
	}
	if by := c.Count.Sink.ByTask(); by[4] == 0 {
		t.Errorf("the new sink task got no tuple: %v", by)
	}
	for i, r := range in {
		select {
		case <-r.Done():
			t.Errorf("task %d stopped on a rescale that keeps it", i+1)
		default:
		}
	}
}

func TestActivationFollowsThePlanState(t *testing.T) {
	stmgrtest.ForEachTransport(t, testActivationFollowsThePlanState)
}

func testActivationFollowsThePlanState(t *testing.T, inMemory bool) {
	c := stmgrtest.NewCluster(t, 1, allInOne)
	c.InMemory = inMemory
	c.TM.SetState(egretpb.TopologyState_TOPOLOGY_STATE_PAUSED)
	c.StartStMgr(1)
	spout := c.StartInstance(1, 1)
	c.StartInstance(2, 1)
	c.WaitConnected(map[int]int{1: 2})
	c.Count.Limit.Set(500)
	if n := spout.Metrics.NextTuples.Load(); n != 0 {
		t.Fatalf("a spout deployed paused called NextTuple %d times", n)
	}
	c.TM.SetState(egretpb.TopologyState_TOPOLOGY_STATE_RUNNING)
	stmgrtest.WaitFor(t, 20*time.Second, "tuples after activation", func() bool { return c.Count.Sink.Total() >= 500 })
	if err := c.Count.Sink.CheckExactlyOnce(0, 500); err != nil {
		t.Fatal(err)
	}
	if got := c.Count.Sink.Activations(); got != 1 {
		t.Errorf("Activate called %d times, want 1", got)
	}
	c.TM.SetState(egretpb.TopologyState_TOPOLOGY_STATE_PAUSED)
	stmgrtest.WaitFor(t, 20*time.Second, "Deactivate", func() bool { return c.Count.Sink.Deactivations() == 1 })
}

func TestRefusedRegistration(t *testing.T) { stmgrtest.ForEachTransport(t, testRefusedRegistration) }

func testRefusedRegistration(t *testing.T, inMemory bool) {
	c := stmgrtest.NewCluster(t, 1, allInOne)
	c.InMemory = inMemory
	c.StartStMgr(1)
	c.StartInstance(1, 1)
	c.StartInstance(2, 1)
	c.WaitConnected(map[int]int{1: 2})
	for _, tc := range []struct {
		name string
		task int
		opt  func(*gateway.Config)
	}{
		{"wrong topology id", 2, func(cfg *gateway.Config) { cfg.TopologyID = "another" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.StartInstance(tc.task, 1, tc.opt)
			if err := r.Wait(t, 20*time.Second); !errors.Is(err, gateway.ErrRefused) {
				t.Fatalf("Run returned %v, want ErrRefused", err)
			}
		})
	}
}

// TestInstanceWaitsForAPlanThatPlacesIt starts an instance for a task
// the current plan does not have (as the executor does after a packing
// plan change, before the new physical plan exists): it registers and
// waits; the plan that adds the task starts it, and the running instances
// follow the new layout without a restart.
func TestInstanceWaitsForAPlanThatPlacesIt(t *testing.T) {
	stmgrtest.ForEachTransport(t, testInstanceWaitsForAPlanThatPlacesIt)
}

func testInstanceWaitsForAPlanThatPlacesIt(t *testing.T, inMemory bool) {
	c := stmgrtest.NewCluster(t, 1, allInOne)
	c.InMemory = inMemory
	c.StartStMgr(1)
	old := []*stmgrtest.Instance{c.StartInstance(1, 1), c.StartInstance(2, 1)}
	c.WaitConnected(map[int]int{1: 2})
	newTask := c.StartInstance(3, 1)
	stmgrtest.WaitFor(t, 20*time.Second, "the new task to register", func() bool { return c.StMgr(1).Counters().InstancesConnected == 3 })
	if v := newTask.Stats.PlanVersion.Load(); v != 0 {
		t.Fatalf("the new task got plan version %d, which does not place it", v)
	}
	bigger, err := stmgrtest.NewCounting(stmgrtest.TopologyID, 2)
	if err != nil {
		t.Fatal(err)
	}
	pp := bigger.PhysicalPlan(allInOne)
	c.TM.SetPacking(pp.GetTopology(), pp.GetPacking())
	stmgrtest.WaitFor(t, 20*time.Second, "the new task to run", func() bool { return c.Count.Sink.Prepared() == 2 })
	stmgrtest.WaitFor(t, 20*time.Second, "the old tasks to follow the new layout", func() bool {
		return old[0].Metrics.Relayouts.Load() == 1 && old[1].Metrics.Relayouts.Load() == 1
	})
	c.Count.Limit.Set(1000)
	stmgrtest.WaitFor(t, 20*time.Second, "tuples", func() bool { return c.Count.Sink.Total() >= 1000 })
	if err := c.Count.Sink.CheckExactlyOnce(0, 1000); err != nil {
		t.Fatal(err)
	}
	if by := c.Count.Sink.ByTask(); by[2] == 0 || by[3] == 0 {
		t.Errorf("tuples per sink task: %v", by)
	}
}

// fakeStMgr accepts instances on a Unix socket, answers their
// registration with a plan and hands the connections to the test.
type fakeStMgr struct {
	t     *testing.T
	path  string
	plan  *egretpb.PhysicalPlan
	conns chan net.Conn
	regs  chan *egretpb.RegisterInstanceRequest

	mu  sync.Mutex
	ln  net.Listener
	all []net.Conn
}

func startFakeStMgr(t *testing.T, path string, pp *egretpb.PhysicalPlan) *fakeStMgr {
	f := &fakeStMgr{t: t, path: path, plan: pp, conns: make(chan net.Conn, 16), regs: make(chan *egretpb.RegisterInstanceRequest, 16)}
	f.listen()
	t.Cleanup(func() {
		f.stop()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.all {
			_ = c.Close()
		}
	})
	return f
}

func (f *fakeStMgr) listen() {
	ln, err := net.Listen("unix", f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.ln = ln
	f.mu.Unlock()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.all = append(f.all, conn)
			f.mu.Unlock()
			_, m, _, err := wire.ReadMessage(bufio.NewReaderSize(&byteReader{conn}, 16), nil, wire.DefaultMaxFrame)
			if err != nil {
				_ = conn.Close()
				continue
			}
			f.regs <- m.(*egretpb.RegisterInstanceRequest)
			if err := wire.WriteMessage(conn, &egretpb.RegisterInstanceResponse{Pplan: f.plan}); err != nil {
				f.t.Errorf("fake stmgr: %v", err)
				return
			}
			f.conns <- conn
		}
	}()
}

func (f *fakeStMgr) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln != nil {
		_ = f.ln.Close()
		f.ln = nil
	}
}

func (f *fakeStMgr) next(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-f.conns:
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("no instance connected")
		return nil
	}
}

// byteReader reads one byte at a time so that a bufio.Reader on it never
// consumes more than the frame asked for.
type byteReader struct{ c net.Conn }

func (b *byteReader) Read(p []byte) (int, error) { return b.c.Read(p[:1]) }

func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "egret-gw-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

type runningGateway struct {
	stats   *gateway.Stats
	metrics *instance.Metrics
	cancel  context.CancelFunc
	done    chan error
}

func runGateway(t *testing.T, count *stmgrtest.Counting, task int, socket string, settings spi.Config) *runningGateway {
	ctx, cancel := context.WithCancel(context.Background())
	g := &runningGateway{stats: &gateway.Stats{}, metrics: &instance.Metrics{}, cancel: cancel, done: make(chan error, 1)}
	go func() {
		g.done <- gateway.Run(ctx, gateway.Config{
			Topology: count.Topology, TopologyID: stmgrtest.TopologyID, TaskID: task, Container: 1,
			StMgrSocket: socket, Settings: settings, Logger: zap.NewNop(),
			Metrics: g.metrics, Stats: g.stats, ReconnectMax: 100 * time.Millisecond,
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-g.done:
			if err != nil {
				t.Errorf("gateway: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("gateway did not stop")
		}
	})
	return g
}

// dataFrame encodes values as one batch of stream "nums/default" (index
// 1 of the counting topology's stream table).
func dataFrame(t *testing.T, count *stmgrtest.Counting, dest uint32, values ...int64) []byte {
	b := &wire.Batch{Dest: dest}
	for _, v := range values {
		enc, err := tuple.AppendValues(nil, []any{v}, count.Topology.Types)
		if err != nil {
			t.Fatal(err)
		}
		b.Buf = wire.AppendRecord(b.Buf, &wire.Header{SrcTask: 1, Stream: 1}, enc)
		b.Count++
	}
	return wire.AppendDataFrame(nil, b)
}

func TestBadFramesFromTheStMgrMakeTheGatewayReconnect(t *testing.T) {
	count, err := stmgrtest.NewCounting(stmgrtest.TopologyID, 1)
	if err != nil {
		t.Fatal(err)
	}
	f := startFakeStMgr(t, filepath.Join(shortDir(t), "s.sock"), count.PhysicalPlan(allInOne))
	g := runGateway(t, count, 2, f.path, nil)
	cases := []struct {
		name string
		send []byte
	}{
		{"garbage", []byte("\xff\xff\xff\xffgarbage")},
		{"unknown frame type", []byte{0, 0, 0, 1, 99}},
		{"data for another task", dataFrame(t, count, 1, 5)},
		{"lying tuple count", []byte{0, 0, 0, 9, byte(wire.FrameData), 0, 0, 0, 2, 0, 0, 0, 9}},
		{"unexpected control frame", must(wire.AppendMessage(nil, &egretpb.StMgrHello{}))},
	}
	conn := f.next(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := conn.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, err := conn.Read(make([]byte, 1)); err == nil {
				t.Fatal("the gateway kept the connection open")
			}
			conn = f.next(t)
			stmgrtest.WaitFor(t, 20*time.Second, "registration", func() bool { return g.stats.Registrations.Load() == int64(i+2) })
		})
	}
	// The bolt survived every reconnection and still gets tuples.
	if _, err := conn.Write(dataFrame(t, count, 2, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	stmgrtest.WaitFor(t, 20*time.Second, "3 tuples at the sink", func() bool { return count.Sink.Total() == 3 })
	if got := count.Sink.Prepared(); got != 1 {
		t.Errorf("the bolt was prepared %d times, want 1", got)
	}
}

func TestOutboundBoundedWhileDisconnected(t *testing.T) {
	count, err := stmgrtest.NewCounting(stmgrtest.TopologyID, 1)
	if err != nil {
		t.Fatal(err)
	}
	f := startFakeStMgr(t, filepath.Join(shortDir(t), "s.sock"), count.PhysicalPlan(allInOne))
	g := runGateway(t, count, 1, f.path, spi.Config{gateway.KeyQueueMaxBytes: "64KiB"})
	var received atomic.Int64
	drain := func(conn net.Conn) {
		go func() {
			br := bufio.NewReader(conn)
			var buf []byte
			for {
				ft, payload, nb, err := wire.ReadFrame(br, buf, wire.DefaultMaxFrame)
				buf = nb
				if err != nil {
					return
				}
				if ft == wire.FrameData {
					_, n, _, _ := wire.ParseDataFrame(payload)
					received.Add(int64(n))
				}
			}
		}()
	}
	conn := f.next(t)
	drain(conn)
	count.Limit.Set(1 << 40)
	stmgrtest.WaitFor(t, 20*time.Second, "tuples at the stream manager", func() bool { return received.Load() > 1000 })

	// The stream manager goes away: the spout keeps running, the gateway
	// holds up to 64 KiB and counts what it drops.
	f.stop()
	_ = conn.Close()
	stmgrtest.WaitFor(t, 20*time.Second, "dropped tuples", func() bool { return g.stats.TuplesLost.Load() > 10000 })
	before := g.metrics.NextTuples.Load()
	stmgrtest.WaitFor(t, 20*time.Second, "the spout to keep running", func() bool { return g.metrics.NextTuples.Load() > before+100 })

	// It comes back: the gateway registers again and data flows.
	f.listen()
	conn = f.next(t)
	at := received.Load()
	drain(conn)
	stmgrtest.WaitFor(t, 20*time.Second, "tuples after the reconnection", func() bool { return received.Load() > at+1000 })
	stmgrtest.WaitFor(t, 20*time.Second, "2 registrations", func() bool { return g.stats.Registrations.Load() == 2 })
	req := <-f.regs
	if req.GetTaskId() != 1 || req.GetTopologyId() != stmgrtest.TopologyID || req.GetPid() != int32(os.Getpid()) {
		t.Errorf("registration %v", req)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
