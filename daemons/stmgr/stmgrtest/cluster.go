package stmgrtest

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/instance"
	"github.com/egret-stream/egret/daemons/instance/gateway"
	"github.com/egret-stream/egret/daemons/stmgr"
	"github.com/egret-stream/egret/internal/memconn"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/statemgr/memory"
)

// TopologyID is the id of the counting topology of a Cluster.
const TopologyID = "count-0001"

// Cluster is a topology manager (fake), stream managers and instances,
// all in this process, talking over real sockets (or, with InMemory,
// instances and their stream manager in memory).
type Cluster struct {
	t        testing.TB
	store    *memory.Store
	dir      string
	Count    *Counting
	Plan     *egretpb.PhysicalPlan
	TM       *FakeTManager
	log      *zap.Logger
	Logs     *observer.ObservedLogs
	Settings spi.Config
	// BackPressureInterval and BackPressureExpiry configure the stream
	// managers started from now on (0: 20ms and 5 intervals).
	BackPressureInterval time.Duration
	BackPressureExpiry   int
	// InMemory makes the instances started from now on connect to their
	// stream manager in memory, as in a container process
	// (process-per-container: the direct hand-off), instead of over its
	// Unix socket. Set it before starting stream managers.
	InMemory bool

	tmSession *memory.Session

	mu        sync.Mutex
	stmgrs    map[int]*runningStMgr
	instances map[int]*Instance
	locals    map[int]*memconn.Listener // by container, with InMemory
}

// Transports names the two ways instances reach their stream manager.
var Transports = []struct {
	Name     string
	InMemory bool
}{{"socket", false}, {"memory", true}}

// ForEachTransport runs f as one subtest per transport; f sets the
// cluster's InMemory from inMemory.
func ForEachTransport(t *testing.T, f func(t *testing.T, inMemory bool)) {
	for _, tr := range Transports {
		t.Run(tr.Name, func(t *testing.T) { f(t, tr.InMemory) })
	}
}

type runningStMgr struct {
	s      *stmgr.StMgr
	cancel context.CancelFunc
	done   chan error
}

// Instance is a task run through the gateway in this process.
type Instance struct {
	Stats   *gateway.Stats
	Metrics *instance.Metrics
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
	waited  atomic.Bool
}

// Wait waits up to timeout for the instance's gateway.Run to return and
// returns its error.
func (i *Instance) Wait(t testing.TB, timeout time.Duration) error {
	t.Helper()
	i.waited.Store(true)
	select {
	case <-i.done:
		return i.err
	case <-time.After(timeout):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("the instance did not stop within %s; goroutines:\n%s", timeout, buf)
		return nil
	}
}

// Done is closed when the instance's gateway.Run returned.
func (i *Instance) Done() <-chan struct{} { return i.done }

// Stop cancels the instance and waits for it.
func (i *Instance) Stop(t testing.TB) error {
	t.Helper()
	i.cancel()
	return i.Wait(t, 20*time.Second)
}

// NewCluster prepares a counting topology with the given number of sink
// tasks placed by containerOf, and starts the fake topology manager.
func NewCluster(t testing.TB, bolts int, containerOf func(task int) int) *Cluster {
	t.Helper()
	return NewClusterWith(t, bolts, containerOf, nil)
}

// NewClusterWith is NewCluster with config applied to the topology's
// builder (for topology settings).
func NewClusterWith(t testing.TB, bolts int, containerOf func(task int) int, config func(*api.TopologyBuilder)) *Cluster {
	t.Helper()
	count, err := newCounting(TopologyID, bolts, false, config)
	if err != nil {
		t.Fatal(err)
	}
	return newCluster(t, count, containerOf)
}

// NewAckingCluster is NewCluster with the at-least-once counting topology
// (see NewCountingAtLeastOnce; config may set its acking settings).
func NewAckingCluster(t testing.TB, bolts int, containerOf func(task int) int, config func(*api.TopologyBuilder)) *Cluster {
	t.Helper()
	count, err := NewCountingAtLeastOnce(TopologyID, bolts, config)
	if err != nil {
		t.Fatal(err)
	}
	return newCluster(t, count, containerOf)
}

func newCluster(t testing.TB, count *Counting, containerOf func(task int) int) *Cluster {
	t.Helper()
	// Unix socket paths must stay short: t.TempDir can be too long.
	dir, err := os.MkdirTemp("", "egret-stmgr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	if testing.Verbose() {
		log = zap.New(zapcore.NewTee(core, zaptest.NewLogger(t, zaptest.Level(zapcore.DebugLevel)).Core()))
	}
	c := &Cluster{
		t: t, store: memory.NewStore(), dir: dir, Count: count, log: log, Logs: logs,
		Plan:      count.PhysicalPlan(containerOf),
		stmgrs:    map[int]*runningStMgr{},
		instances: map[int]*Instance{},
		locals:    map[int]*memconn.Listener{},
		Settings: spi.Config{
			stmgr.KeyHeartbeatInterval: "100ms",
			stmgr.KeyMetricsInterval:   "50ms",
		},
	}
	c.tmSession = c.store.NewSession()
	c.TM = StartFakeTManager(t, c.tmSession, "count", c.Plan)
	t.Cleanup(c.StopAll)
	return c
}

// Socket is the stream manager socket of a container.
func (c *Cluster) Socket(container int) string {
	return filepath.Join(c.dir, fmt.Sprintf("stmgr-%d.sock", container))
}

// MetricsSocket is the metrics manager socket of a container (nothing
// listens there unless a test does).
func (c *Cluster) MetricsSocket(container int) string {
	return filepath.Join(c.dir, fmt.Sprintf("metrics-%d.sock", container))
}

// StartStMgr starts the stream manager of a container (on a new port).
func (c *Cluster) StartStMgr(container int) *stmgr.StMgr {
	c.t.Helper()
	var local net.Listener
	if c.InMemory {
		ln := memconn.NewListener(c.Socket(container)+" (in memory)", 0)
		c.mu.Lock()
		c.locals[container] = ln
		c.mu.Unlock()
		local = ln
	}
	s, err := stmgr.New(stmgr.Config{
		Local:         local,
		TopologyName:  "count",
		TopologyID:    TopologyID,
		Container:     container,
		Socket:        c.Socket(container),
		Host:          "127.0.0.1",
		MetricsSocket: c.MetricsSocket(container),
		StateManager:  c.store.NewSession(),
		Settings:      c.Settings,
		ReconnectMax:  200 * time.Millisecond,

		BackPressureInterval: cmp.Or(c.BackPressureInterval, 20*time.Millisecond),
		BackPressureExpiry:   cmp.Or(c.BackPressureExpiry, 5),
	}, c.log.With(zap.String("daemon", fmt.Sprintf("stmgr-%d", container))))
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningStMgr{s: s, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	c.mu.Lock()
	c.stmgrs[container] = r
	c.mu.Unlock()
	return s
}

// RestartTManager stops the fake topology manager, ends its state
// manager session (so its ephemeral location disappears) and starts a new
// one on a new port. The new one keeps the topology state, and continues
// the plan versions when keepVersions is set (else starts them again).
func (c *Cluster) RestartTManager(keepVersions bool) {
	c.t.Helper()
	old := c.TM.Plan()
	state := old.GetState()
	c.TM.Stop()
	if err := c.tmSession.Close(); err != nil {
		c.t.Fatal(err)
	}
	c.tmSession = c.store.NewSession()
	pp := proto.Clone(c.Plan).(*egretpb.PhysicalPlan)
	pp.State = state
	if keepVersions {
		pp.Version = old.GetVersion()
	}
	c.TM = StartFakeTManager(c.t, c.tmSession, "count", pp)
}

// StMgr returns the running stream manager of a container.
func (c *Cluster) StMgr(container int) *stmgr.StMgr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmgrs[container].s
}

// StopStMgr stops a container's stream manager and waits for it.
func (c *Cluster) StopStMgr(container int) {
	c.t.Helper()
	c.mu.Lock()
	r := c.stmgrs[container]
	delete(c.stmgrs, container)
	c.mu.Unlock()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			c.t.Errorf("stream manager %d: %v", container, err)
		}
	case <-time.After(20 * time.Second):
		c.t.Fatalf("stream manager %d did not stop", container)
	}
}

// DialInMemory connects to the in-memory listener of a container's stream
// manager (InMemory), as an instance of its process does.
func (c *Cluster) DialInMemory(ctx context.Context, container int) (net.Conn, error) {
	c.mu.Lock()
	ln := c.locals[container]
	c.mu.Unlock()
	if ln == nil {
		return nil, fmt.Errorf("no stream manager in container %d", container)
	}
	return ln.Dial(ctx)
}

// StartInstance runs a task through the gateway, as an instance process
// would; opts may change its config.
func (c *Cluster) StartInstance(task, container int, opts ...func(*gateway.Config)) *Instance {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Instance{Stats: &gateway.Stats{}, Metrics: &instance.Metrics{}, cancel: cancel, done: make(chan struct{})}
	cfg := gateway.Config{
		Topology:      c.Count.Topology,
		TopologyID:    TopologyID,
		TaskID:        task,
		Container:     container,
		StMgrSocket:   c.Socket(container),
		MetricsSocket: c.MetricsSocket(container),
		Settings:      spi.Config{gateway.KeyMetricsInterval: "50ms"},
		Logger:        c.log.With(zap.String("daemon", fmt.Sprintf("instance-%d", task))),
		Metrics:       r.Metrics,
		Stats:         r.Stats,
		ReconnectMax:  200 * time.Millisecond,
	}
	if c.InMemory {
		cfg.Dial = func(ctx context.Context) (net.Conn, error) { return c.DialInMemory(ctx, container) }
	}
	for _, o := range opts {
		o(&cfg)
	}
	go func() { r.err = gateway.Run(ctx, cfg); close(r.done) }()
	c.mu.Lock()
	c.instances[task] = r
	c.mu.Unlock()
	return r
}

// StopAll stops every instance, then every stream manager; it runs at
// the end of the test.
func (c *Cluster) StopAll() {
	c.mu.Lock()
	instances, stmgrs := c.instances, c.stmgrs
	c.instances, c.stmgrs = map[int]*Instance{}, map[int]*runningStMgr{}
	c.mu.Unlock()
	for task, r := range instances {
		r.cancel()
		select {
		case <-r.done:
			if r.err != nil && !r.waited.Load() {
				c.t.Errorf("instance %d: %v", task, r.err)
			}
		case <-time.After(20 * time.Second):
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			c.t.Errorf("instance %d did not stop; goroutines:\n%s", task, buf)
		}
	}
	for id, r := range stmgrs {
		r.cancel()
		select {
		case <-r.done:
		case <-time.After(20 * time.Second):
			c.t.Errorf("stream manager %d did not stop", id)
		}
	}
}

// WaitConnected waits until every stream manager has the plan, its
// instances and its peers.
func (c *Cluster) WaitConnected(instances map[int]int) {
	c.t.Helper()
	WaitFor(c.t, 20*time.Second, "instances and peers connected", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		plan := c.TM.Plan()
		if plan == nil {
			return false
		}
		for id, r := range c.stmgrs {
			cs := r.s.Counters()
			if cs.PlanVersion != plan.GetVersion() || cs.InstancesConnected != instances[id] || cs.PeersConnected != len(c.stmgrs)-1 {
				return false
			}
			for _, loc := range plan.GetStmgrs() {
				if int(loc.GetContainer()) == id {
					continue
				}
				if cs.Peers[int(loc.GetContainer())].Addr != fmt.Sprintf("%s:%d", loc.GetHost(), loc.GetDataPort()) {
					return false
				}
			}
		}
		return true
	})
}
