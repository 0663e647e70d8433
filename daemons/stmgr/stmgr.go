package stmgr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/daemons/acking"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Limits on what a physical plan may contain; a plan beyond them is
// rejected rather than sizing the routing table after it.
const (
	maxTaskID    = 1 << 20
	maxContainer = 1 << 16
)

// maxPooledFrame bounds the frame buffers kept for reuse.
const maxPooledFrame = 1 << 20

// frame is one frame read from a connection: body is the type byte and
// the payload (the length prefix is written again when forwarding).
type frame struct {
	body []byte
	// epoch is the recovery epoch of the connection the frame was read
	// on (effectively-once fencing; 0 otherwise).
	epoch int64
}

func frameSize(f *frame) int { return len(f.body) + 4 }

// frameTuples is the tuple count of a data frame (0 for control frames).
func frameTuples(f *frame) int64 {
	if len(f.body) < 9 || wire.FrameType(f.body[0]) != wire.FrameData {
		return 0
	}
	return int64(uint32(f.body[5])<<24 | uint32(f.body[6])<<16 | uint32(f.body[7])<<8 | uint32(f.body[8]))
}

// dest is the queue toward one destination (a local instance or a peer
// stream manager) and its counters.
type dest struct {
	name   string
	q      *wire.Queue[*frame]
	tuples atomic.Int64 // tuples written to the connection
	bytes  atomic.Int64
	lost   atomic.Int64
	// live is set while the destination is connected; starting is set
	// for a local task whose instance has not connected yet since the
	// task was placed here, and for a peer not connected yet since it
	// joined the plan. Only live and starting queues count for back
	// pressure: tuples for a destination that is starting wait for it
	// (spouts pause) instead of being dropped, while the queue of one
	// that died does not freeze the topology.
	live     atomic.Bool
	starting atomic.Bool
	// ctl is a control frame (complete, header included) to write before
	// the next data: the back pressure state toward a peer.
	ctl atomic.Pointer[[]byte]
}

// taskDest is the destination of a local task. Its queue outlives the
// instance's connections: frames wait there while the instance
// (re)connects.
type taskDest struct {
	dest
	task int32
	conn *instConn // guarded by StMgr.mu
	// spout is set when the current plan says the task is a spout's: its
	// connection is not read while back pressure is on.
	spout atomic.Bool
	// al is the task's barrier alignment (effectively-once).
	al aligner
}

// routes is the routing table built from a physical plan; readers load it
// atomically for every frame.
type routes struct {
	local     []*taskDest // by task id: the local tasks
	container []int32     // by task id: the task's container (0: unknown)
	peers     []*peer     // by container id
	// ackers are the ledgers of the local spout tasks, by task id
	// (at-least-once topologies only).
	ackers []*acking.Acker
}

// StMgr is a running stream manager.
type StMgr struct {
	cfg    Config
	set    settings
	log    *zap.Logger
	unixLn net.Listener
	tcpLn  net.Listener
	pool   sync.Pool

	table     atomic.Pointer[routes]
	planReady chan struct{} // closed when the first plan is applied

	mu        sync.Mutex
	pplan     *egretpb.PhysicalPlan
	tasks     map[int32]*taskDest
	peers     map[int32]*peer
	ackers    map[int32]*spoutAcker
	conns     map[net.Conn]struct{}
	runCtx    context.Context
	closed    bool
	closeOnce sync.Once

	wg sync.WaitGroup
	c  counters
	bp *backPressure
	// ackTimeout is the longest message timeout of the spouts (ns): the
	// ledgers rotate so that a root stays at least this long.
	ackTimeout atomic.Int64
	// dropMode is set when the topology drops the tuples of local spouts
	// during back pressure instead of stopping to read them.
	dropMode atomic.Bool
	// eo is the effectively-once state (checkpoints, epochs).
	eo eoState
}

// Run runs a stream manager until ctx ends.
func Run(ctx context.Context, cfg Config, log *zap.Logger) error {
	s, err := New(cfg, log)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// New checks cfg and opens the stream manager's listeners (the Unix
// socket for instances, the TCP port for peers), so that Port is known
// before Run. Call Run, or Close to release the listeners.
func New(cfg Config, log *zap.Logger) (*StMgr, error) {
	if log == nil {
		log = zap.NewNop()
	}
	set, err := cfg.check()
	if err != nil {
		return nil, err
	}
	s := &StMgr{
		cfg:       cfg,
		set:       set,
		log:       log.With(zap.String("topology", cfg.TopologyName), zap.Int("container", cfg.Container)),
		planReady: make(chan struct{}),
		tasks:     map[int32]*taskDest{},
		peers:     map[int32]*peer{},
		ackers:    map[int32]*spoutAcker{},
		conns:     map[net.Conn]struct{}{},
		bp:        newBackPressure(),
	}
	s.pool.New = func() any { return &frame{} }
	s.eo.init(cfg.CkptMgrSocket, s.log)
	if err := removeStaleSocket(cfg.Socket); err != nil {
		return nil, err
	}
	if s.unixLn, err = net.Listen("unix", cfg.Socket); err != nil {
		return nil, fmt.Errorf("stream manager: listen on instance socket: %w", err)
	}
	if s.tcpLn, err = net.Listen("tcp", net.JoinHostPort(cfg.BindHost, strconv.Itoa(cfg.Port))); err != nil {
		_ = s.unixLn.Close()
		return nil, fmt.Errorf("stream manager: listen on TCP port %d for peers: %w", cfg.Port, err)
	}
	return s, nil
}

// removeStaleSocket removes a socket file left by a dead process, and
// refuses to steal one a live process serves.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream manager: socket path %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("stream manager: %s exists and is not a socket; remove it or choose another --socket", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return fmt.Errorf("stream manager: another process serves %s (is a stream manager of this container already running?)", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stream manager: remove stale socket %s: %w", path, err)
	}
	return nil
}

// Port is the TCP port peers connect to.
func (s *StMgr) Port() int { return s.tcpLn.Addr().(*net.TCPAddr).Port }

// Close releases the listeners of a stream manager whose Run was never
// called; Run closes them itself.
func (s *StMgr) Close() error {
	s.closeOnce.Do(func() {
		_ = s.unixLn.Close()
		_ = s.tcpLn.Close()
		if s.cfg.Local != nil {
			_ = s.cfg.Local.Close()
		}
	})
	return nil
}

// Run serves until ctx ends: it accepts instances and peers, registers
// with the topology manager, routes data and publishes metrics. It
// returns nil when ctx ends, or an error if a listener fails.
func (s *StMgr) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.runCtx = ctx
	s.mu.Unlock()
	s.log.Info("stream manager serving", zap.String("socket", s.cfg.Socket), zap.Int("port", s.Port()), zap.String("host", s.cfg.Host))
	errc := make(chan error, 3)
	s.wg.Add(8)
	go func() { defer s.wg.Done(); s.eo.ckpt.run(ctx, s.set.maxFrame) }()
	go func() { defer s.wg.Done(); s.runAlignmentTimeouts(ctx) }()
	go func() { defer s.wg.Done(); s.runBackPressure(ctx) }()
	go func() { defer s.wg.Done(); s.rotateAckers(ctx) }()
	go func() { defer s.wg.Done(); errc <- s.acceptLoop(ctx, s.unixLn, s.serveInstance) }()
	if s.cfg.Local != nil {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); errc <- s.acceptLoop(ctx, s.cfg.Local, s.serveInstance) }()
	}
	go func() { defer s.wg.Done(); errc <- s.acceptLoop(ctx, s.tcpLn, s.servePeer) }()
	go func() { defer s.wg.Done(); s.runTManager(ctx) }()
	go func() {
		defer s.wg.Done()
		wire.PublishMetrics(ctx, s.cfg.MetricsSocket, s.set.metricsEvery, s.metricsMessage, s.log)
	}()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	_ = s.Close()
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	for _, td := range s.tasks {
		td.q.Close()
		td.q.Discard(s.dropFrame(&td.dest))
	}
	s.mu.Unlock()
	s.log.Info("stream manager stopped")
	return err
}

func (s *StMgr) acceptLoop(ctx context.Context, ln net.Listener, serve func(context.Context, net.Conn)) error {
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("stream manager: accept on %s: %w", ln.Addr(), err)
		}
		if !s.track(conn) {
			_ = conn.Close()
			return nil
		}
		s.sizeSocket(conn)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(conn)
			serve(ctx, conn)
		}()
	}
}

// sizeSocket applies egret.stmgr.socket.buffer.bytes to a data
// connection.
func (s *StMgr) sizeSocket(c net.Conn) {
	if s.set.sockBuf <= 0 {
		return
	}
	if b, ok := c.(interface {
		SetReadBuffer(int) error
		SetWriteBuffer(int) error
	}); ok {
		_ = b.SetReadBuffer(s.set.sockBuf)
		_ = b.SetWriteBuffer(s.set.sockBuf)
	}
}

// track records an open connection so that shutdown closes it.
func (s *StMgr) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *StMgr) untrack(c net.Conn) {
	_ = c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *StMgr) getFrame() *frame {
	f := s.pool.Get().(*frame)
	f.epoch = 0
	return f
}

func (s *StMgr) putFrame(f *frame) {
	if cap(f.body) > maxPooledFrame {
		f.body = nil
	}
	s.pool.Put(f)
}

// dropFrame returns a function that counts a discarded frame as lost
// toward d and recycles it.
func (s *StMgr) dropFrame(d *dest) func(*frame) {
	return func(f *frame) {
		n := frameTuples(f)
		d.lost.Add(n)
		s.c.lost.Add(n)
		s.putFrame(f)
	}
}

// closeReason classifies why a connection ended: protocol errors are
// logged as errors and counted; a peer hanging up is routine.
func (s *StMgr) closeReason(who string, conn net.Conn, err error) {
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, context.Canceled),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		s.log.Info("connection closed", zap.String("peer", who), zap.String("remote", remote(conn)))
	default:
		s.c.rejected.Add(1)
		s.log.Error("closing connection", zap.String("peer", who), zap.String("remote", remote(conn)), zap.Error(err))
	}
}

func remote(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil && a.String() != "" {
		return a.String()
	}
	return c.LocalAddr().String()
}
