package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/instance"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// dataHeader is a data frame's length, type, destination and count.
const dataHeader = wire.DataHeaderSize

// maxPooledBatch bounds the batch buffers kept for reuse.
const maxPooledBatch = 1 << 20

// ctlDest marks an outbound "batch" whose Buf is a whole control frame
// (acking updates), written as is. Task ids stay far below it.
const ctlDest = math.MaxUint32

func batchSize(b *wire.Batch) int {
	if b.Dest == ctlDest {
		return len(b.Buf)
	}
	return len(b.Buf) + dataHeader
}

// gateway is the socket Transport of one instance.
type gateway struct {
	cfg   Config
	set   settings
	log   *zap.Logger
	stats *Stats
	pool  sync.Pool
	out   *wire.Queue[*wire.Batch]
	// dmu orders the outbound batches; direct is the outbound side of
	// a direct session (nil otherwise: batches go to out).
	dmu    sync.Mutex
	direct atomic.Pointer[directOut]
	inbox  chan instance.Msg
	in     budget

	component string
	layout    *plan.Layout
	active    bool
	activeCh  chan bool // latest wanted activation state, for the forwarder
	// runtimeCfg is the runtime config of the last plan applied; configCh
	// holds the changes not yet delivered to the instance (merged).
	runtimeCfg map[string]string
	configCh   chan map[string]string
	acks       ackCounters
	// atLeastOnce is set (before metrics are published) when the
	// topology acks.
	atLeastOnce bool
	// effectivelyOnce is set likewise when the topology checkpoints.
	effectivelyOnce bool
}

// Run connects to the stream manager, registers the task, builds the
// instance from the physical plan and runs it until ctx ends (nil), the
// component fails to start, a new plan changes the layout
// (ErrLayoutChanged) or the stream manager refuses the task (ErrRefused).
// A lost stream manager connection is re-established with backoff while
// the component keeps running.
func Run(ctx context.Context, cfg Config) error {
	set, err := cfg.check()
	if err != nil {
		return err
	}
	g := &gateway{
		cfg:      cfg,
		set:      set,
		log:      cfg.Logger.With(zap.Int("task", cfg.TaskID)),
		stats:    cfg.Stats,
		inbox:    make(chan instance.Msg, 1024),
		activeCh: make(chan bool, 1),
		configCh: make(chan map[string]string, 1),
	}
	g.in.init(set.queueMax)
	g.out = wire.NewQueue(set.queueMax, batchSize)
	g.pool.New = func() any {
		return &wire.Batch{Buf: make([]byte, 0, instance.DefaultBatchBytes+instance.DefaultBatchBytes/4)}
	}
	return g.run(ctx)
}

func (g *gateway) run(ctx context.Context) error {
	reg, err := g.connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	pp := reg.pp
	topo, layout, err := g.build(pp)
	if err != nil {
		_ = reg.conn.Close()
		return err
	}
	g.stats.PlanVersion.Store(pp.GetVersion())
	g.layout, g.component = layout, layout.ComponentOf[g.cfg.TaskID]
	g.log = g.log.With(zap.String("component", g.component))
	g.active = isActive(pp)
	g.runtimeCfg = maps.Clone(pp.GetRuntimeConfig())
	g.atLeastOnce = topo.Logical.DeliveryMode() == topology.AtLeastOnce
	g.effectivelyOnce = topo.Logical.DeliveryMode() == topology.EffectivelyOnce
	in, err := instance.New(instance.Config{
		Topology:      topo,
		Layout:        layout,
		TaskID:        g.cfg.TaskID,
		Transport:     g,
		Logger:        g.cfg.Logger,
		Metrics:       g.cfg.Metrics,
		StartActive:   g.active,
		ResourcesDir:  g.cfg.ResourcesDir,
		MaxFrame:      g.set.maxFrame,
		CkptMgrSocket: g.cfg.CkptMgrSocket,
		StateDir:      g.cfg.StateDir,
	})
	if err != nil {
		_ = reg.conn.Close()
		return err
	}
	instCtx, stopInstance := context.WithCancel(context.Background())
	defer stopInstance()
	// instDone is closed once the instance returned, with its error in
	// instErr.
	var instErr error
	instDone := make(chan struct{})
	go func() {
		instErr = in.Run(instCtx)
		close(instDone)
	}()
	go g.forwardActivation(instCtx, g.active)
	go g.forwardConfig(instCtx)
	metricsCtx, stopMetrics := context.WithCancel(ctx)
	defer stopMetrics()
	go wire.PublishMetrics(metricsCtx, g.cfg.MetricsSocket, g.set.metricsEvery, g.metricsMessage, g.log)
	g.log.Info("instance running", zap.Uint64("plan_version", pp.GetVersion()), zap.Bool("active", g.active))

	var result error
	var s *session
	for {
		s = g.startSession(instCtx, reg)
		err := g.serve(ctx, s, instDone, &instErr)
		if err == nil || errors.Is(err, ErrLayoutChanged) || ctx.Err() != nil || !errors.Is(err, errConnLost) {
			result = err
			break
		}
		g.log.Warn("lost the stream manager connection; reconnecting (the component keeps running)", zap.Error(err))
		g.stopSession(s)
		s = nil
		g.out.SetBlocking(false)
		reg, err = g.connect(ctx)
		if err != nil {
			if ctx.Err() == nil {
				result = err
			}
			break
		}
		r, err := g.applyPlan(reg.pp)
		if err == nil && r != nil {
			// Before the new session reads data routed by the new plan.
			select {
			case g.inbox <- instance.Msg{Kind: instance.MsgLayout, Relayout: r}:
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		if err != nil {
			_ = reg.conn.Close()
			if ctx.Err() == nil {
				result = err
			}
			break
		}
	}
	// Shut down: stop the component, let it flush, write what is queued.
	stopInstance()
	var stopErr error
	select {
	case <-instDone:
		stopErr = instErr
	case <-time.After(g.cfg.DrainTimeout):
		g.log.Warn("the component did not stop in time")
	}
	if s != nil {
		if result == nil || errors.Is(result, ErrLayoutChanged) {
			g.drain()
		}
		g.stopSession(s)
	}
	if result == nil && stopErr != nil {
		result = stopErr
	}
	if stopErr != nil {
		// The component failed (to open or prepare): publish what the
		// instance recorded of it before the process exits, so that the
		// exception reaches the topology manager.
		if err := wire.PublishOnce(g.cfg.MetricsSocket, time.Second, g.metricsMessage); err != nil {
			g.log.Debug("last metrics report", zap.Error(err))
		}
	}
	return result
}

var errConnLost = errors.New("stream manager connection lost")

// serve handles one session's events until it ends.
func (g *gateway) serve(ctx context.Context, s *session, instDone <-chan struct{}, instErr *error) error {
	for {
		select {
		case pp := <-s.plans:
			r, err := g.applyPlan(pp)
			s.applied <- r // the reader delivers it before the frames that follow the plan
			if err != nil {
				return err
			}
		case err := <-s.errc:
			return fmt.Errorf("%w: %w", errConnLost, err)
		case <-instDone:
			err := *instErr
			if err == nil {
				err = errors.New("the instance stopped by itself")
			}
			return err
		case <-ctx.Done():
			return nil
		}
	}
}

// drain waits until the outbound queue is written or DrainTimeout passes.
func (g *gateway) drain() {
	deadline := time.Now().Add(g.cfg.DrainTimeout)
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for !g.out.Empty() && time.Now().Before(deadline) && g.stats.Connected.Load() {
		<-t.C
	}
}

// applyPlan reacts to a new physical plan: a changed layout that keeps
// this task where it is is returned as a Relayout for the instance (which
// follows it without a restart; the caller delivers it before any data
// routed by the new plan), any other layout change ends the instance, a
// changed state (de)activates a spout, a changed runtime config is handed
// to the instance (applied live).
func (g *gateway) applyPlan(pp *egretpb.PhysicalPlan) (*instance.Relayout, error) {
	g.stats.PlanVersion.Store(pp.GetVersion())
	var r *instance.Relayout
	layout := plan.FromProto(pp.GetPacking()).Layout()
	if !sameLayout(layout, g.layout) {
		var err error
		if r, err = g.relayout(pp); err != nil {
			g.log.Info("the new physical plan changes the task layout; exiting so the executor restarts this instance", zap.Uint64("plan_version", pp.GetVersion()), zap.Error(err))
			return nil, ErrLayoutChanged
		}
	}
	active := isActive(pp)
	if active != g.active {
		g.active = active
		g.log.Info("topology state changed", zap.String("state", pp.GetState().String()))
		select {
		case <-g.activeCh:
		default:
		}
		g.activeCh <- active
	}
	if next := pp.GetRuntimeConfig(); !maps.Equal(next, g.runtimeCfg) {
		changed := map[string]string{}
		for k, v := range next {
			if old, ok := g.runtimeCfg[k]; !ok || old != v {
				changed[k] = v
			}
		}
		for k := range g.runtimeCfg {
			if _, ok := next[k]; !ok {
				changed[k] = ""
			}
		}
		g.runtimeCfg = maps.Clone(next)
		g.log.Info("runtime config changed", zap.Uint64("plan_version", pp.GetVersion()), zap.Int("settings", len(changed)))
		select {
		case pending := <-g.configCh:
			maps.Copy(pending, changed)
			changed = pending
		default:
		}
		g.configCh <- changed
	}
	return r, nil
}

// relayout prepares the instance's switch to the layout of pp. An
// effectively-once task restarts instead: its checkpointed state and
// barrier alignment belong to the task set it started with.
func (g *gateway) relayout(pp *egretpb.PhysicalPlan) (*instance.Relayout, error) {
	if g.effectivelyOnce {
		return nil, errors.New("an effectively-once task restarts on a layout change")
	}
	topo, layout, err := g.build(pp)
	if err != nil {
		return nil, err
	}
	r, err := instance.PrepareRelayout(topo, layout, g.cfg.TaskID, g.component, g.cfg.Container)
	if err != nil {
		return nil, err
	}
	g.layout = layout
	g.log.Info("the new physical plan changes the task layout; the instance follows it without a restart", zap.Uint64("plan_version", pp.GetVersion()))
	return r, nil
}

// forwardConfig delivers runtime config changes to the instance without
// blocking the gateway's main loop.
func (g *gateway) forwardConfig(ctx context.Context) {
	for {
		select {
		case changed := <-g.configCh:
			select {
			case g.inbox <- instance.Msg{Kind: instance.MsgConfig, Config: changed}:
			case <-ctx.Done():
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// isActive reports whether a plan lets spouts run: every state but
// PAUSED (a plan without a state is treated as running).
func isActive(pp *egretpb.PhysicalPlan) bool {
	return pp.GetState() != egretpb.TopologyState_TOPOLOGY_STATE_PAUSED
}

func sameLayout(a, b *plan.Layout) bool {
	return maps.Equal(a.ComponentOf, b.ComponentOf) && maps.Equal(a.ContainerOf, b.ContainerOf) && maps.Equal(a.IndexOf, b.IndexOf)
}

// forwardActivation delivers activation changes to the instance without
// blocking the gateway's main loop.
func (g *gateway) forwardActivation(ctx context.Context, sent bool) {
	for {
		select {
		case active := <-g.activeCh:
			if active == sent {
				continue
			}
			kind := instance.MsgDeactivate
			if active {
				kind = instance.MsgActivate
			}
			select {
			case g.inbox <- instance.Msg{Kind: kind}:
				sent = active
			case <-ctx.Done():
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// build derives the instance's topology and layout from the physical
// plan: the plan's logical topology (with its parallelism and runtime
// config) and the binary's factories, looked up by component name.
func (g *gateway) build(pp *egretpb.PhysicalPlan) (*api.Topology, *plan.Layout, error) {
	logical, err := topology.FromProto(pp.GetTopology())
	if err != nil {
		return nil, nil, fmt.Errorf("physical plan topology: %w", err)
	}
	bin := g.cfg.Topology
	t := &api.Topology{
		Logical:         logical,
		Spouts:          map[string]api.SpoutFactory{},
		Bolts:           map[string]api.BoltFactory{},
		CustomGroupings: bin.CustomGroupings,
		Types:           bin.Types,
	}
	for _, c := range logical.Components {
		switch c.Kind {
		case topology.Spout:
			f, ok := bin.Spouts[c.Name]
			if !ok {
				return nil, nil, fmt.Errorf("spout %q of the physical plan is not a spout of this binary (was the topology rebuilt after submission?)", c.Name)
			}
			t.Spouts[c.Name] = f
		default:
			f, ok := bin.Bolts[c.Name]
			if !ok {
				return nil, nil, fmt.Errorf("bolt %q of the physical plan is not a bolt of this binary (was the topology rebuilt after submission?)", c.Name)
			}
			t.Bolts[c.Name] = f
		}
	}
	for k, v := range pp.GetRuntimeConfig() {
		if logical.Config == nil {
			logical.Config = map[string]string{}
		}
		logical.Config[k] = v
	}
	layout := plan.FromProto(pp.GetPacking()).Layout()
	if _, ok := layout.ComponentOf[g.cfg.TaskID]; !ok {
		return nil, nil, fmt.Errorf("%w: task %d is not in the physical plan", ErrLayoutChanged, g.cfg.TaskID)
	}
	if c := layout.ContainerOf[g.cfg.TaskID]; c != g.cfg.Container {
		return nil, nil, fmt.Errorf("%w: the physical plan places task %d in container %d, not %d", ErrLayoutChanged, g.cfg.TaskID, c, g.cfg.Container)
	}
	return t, layout, nil
}

// connect dials the stream manager with backoff until it registers the
// task and a physical plan is known.
func (g *gateway) connect(ctx context.Context) (*registration, error) {
	bo := wire.Backoff{Initial: g.cfg.ReconnectMin, Max: g.cfg.ReconnectMax}
	for attempt := 1; ; attempt++ {
		reg, err := g.register(ctx)
		if err == nil {
			g.stats.Registrations.Add(1)
			g.stats.Connected.Store(true)
			g.stats.Direct.Store(reg.out != nil)
			g.out.SetBlocking(true)
			g.log.Info("registered with the stream manager", zap.String("socket", g.cfg.StMgrSocket), zap.Uint64("plan_version", reg.pp.GetVersion()), zap.Bool("direct", reg.out != nil))
			return reg, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, ErrRefused) || errors.Is(err, ErrLayoutChanged) {
			return nil, err
		}
		if attempt == 1 || attempt%50 == 0 {
			g.log.Warn("cannot register with the stream manager; retrying", zap.String("socket", g.cfg.StMgrSocket), zap.Int("attempts", attempt), zap.Error(err))
		}
		select {
		case <-time.After(bo.Next()):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// dial connects to the stream manager: Config.Dial, else its socket.
func (g *gateway) dial(ctx context.Context) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.HandshakeTimeout)
	defer cancel()
	if g.cfg.Dial != nil {
		return g.cfg.Dial(ctx)
	}
	var d net.Dialer
	return d.DialContext(ctx, "unix", g.cfg.StMgrSocket)
}

// registration is a registered connection to the stream manager.
type registration struct {
	conn net.Conn
	br   *bufio.Reader
	pp   *egretpb.PhysicalPlan
	// in and out are set on a direct connection (see direct.go): in
	// takes the stream manager's frames, out the instance's.
	in  *inSink
	out wire.StMgrHandler
}

// register performs one registration: request, response, and (when the
// stream manager has no plan yet) the wait for its first plan.
func (g *gateway) register(ctx context.Context) (*registration, error) {
	conn, err := g.dial(ctx)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	fail := func(err error) (*registration, error) {
		_ = conn.Close()
		return nil, err
	}
	// A stream manager in this process finds the sink attached to the
	// connection and hands its frames to it.
	in := &inSink{g: g, started: make(chan struct{})}
	ac, inProcess := conn.(wire.Attacher)
	if inProcess {
		ac.Attach(in)
	}
	_ = conn.SetDeadline(time.Now().Add(g.cfg.HandshakeTimeout))
	req := &egretpb.RegisterInstanceRequest{TopologyId: g.cfg.TopologyID, TaskId: int32(g.cfg.TaskID), Component: g.component, Pid: int32(os.Getpid())}
	if g.layout != nil {
		req.LayoutFingerprint = g.layout.Fingerprint()
	}
	if err := wire.WriteMessage(conn, req); err != nil {
		return fail(fmt.Errorf("register: %w", err))
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	t, m, buf, err := wire.ReadMessage(br, nil, g.set.maxFrame)
	if err != nil {
		return fail(fmt.Errorf("register response: %w", err))
	}
	resp, ok := m.(*egretpb.RegisterInstanceResponse)
	if !ok {
		return fail(fmt.Errorf("%w: expected RegisterInstanceResponse, got %s", wire.ErrCorrupt, t))
	}
	if resp.GetLayoutChanged() {
		return fail(fmt.Errorf("%w: %s", ErrLayoutChanged, resp.GetError()))
	}
	if resp.GetError() != "" {
		return fail(fmt.Errorf("%w: %s", ErrRefused, resp.GetError()))
	}
	_ = conn.SetDeadline(time.Time{})
	pp := resp.GetPplan()
	for pp == nil {
		t, m, buf, err = wire.ReadMessage(br, buf, g.set.maxFrame)
		if err != nil {
			return fail(fmt.Errorf("waiting for the physical plan: %w", err))
		}
		np, ok := m.(*egretpb.NewPhysicalPlan)
		if !ok {
			return fail(fmt.Errorf("%w: expected NewPhysicalPlan, got %s", wire.ErrCorrupt, t))
		}
		pp = np.GetPplan()
	}
	reg := &registration{conn: conn, br: br, pp: pp}
	if inProcess {
		if out, ok := ac.Peer().(wire.StMgrHandler); ok {
			reg.in, reg.out = in, out
		}
	}
	return reg, nil
}

// session is one registered connection: a reader and a writer goroutine.
type session struct {
	conn  net.Conn
	plans chan *egretpb.PhysicalPlan
	// applied answers each plan with the layout change the reader must
	// deliver before the frames that follow it (nil: none).
	applied chan *instance.Relayout
	errc    chan error
	done    chan struct{}
	// cancel ends the context of a direct session's calls.
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

func (g *gateway) startSession(instCtx context.Context, reg *registration) *session {
	s := &session{conn: reg.conn, plans: make(chan *egretpb.PhysicalPlan, 1), applied: make(chan *instance.Relayout, 1), errc: make(chan error, 1), done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := g.readLoop(s, reg.br); err != nil {
			s.fail(fmt.Errorf("read: %w", err))
		}
	}()
	if reg.out != nil {
		g.startDirect(instCtx, s, reg)
		return s
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := g.writeLoop(s); err != nil {
			s.fail(fmt.Errorf("write: %w", err))
		}
	}()
	return s
}

// fail ends the session with err (the first error ends it; later ones
// are its consequences).
func (s *session) fail(err error) {
	select {
	case s.errc <- err:
	default:
	}
}

// stopSession closes the session's connection and waits for its
// goroutines.
func (g *gateway) stopSession(s *session) {
	s.once.Do(func() {
		close(s.done)
		if s.cancel != nil {
			s.cancel()
		}
		_ = s.conn.Close()
	})
	s.wg.Wait()
	g.stopDirect(s)
}

// readLoop turns the stream manager's frames into messages for the
// instance: data frames become batches on the inbox (bounded by the
// inbound byte budget), plans go to the main loop.
func (g *gateway) readLoop(s *session, br *bufio.Reader) error {
	defer g.stats.Connected.Store(false)
	var hdr [dataHeader]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(br, hdr[:wire.HeaderSize]); err != nil {
			return err
		}
		n, t := wire.ParseFrameHeader(hdr[:])
		if n == 0 || n > g.set.maxFrame {
			return fmt.Errorf("%w: frame of %d bytes (limit %d)", wire.ErrCorrupt, n, g.set.maxFrame)
		}
		if t != wire.FrameData {
			if cap(buf) < n-1 {
				buf = make([]byte, n-1)
			}
			payload := buf[:n-1]
			if _, err := io.ReadFull(br, payload); err != nil {
				return err
			}
			if err := g.handleControl(s, nil, t, payload); err != nil {
				if errors.Is(err, errSessionEnded) {
					return nil
				}
				return err
			}
			continue
		}
		if n < wire.DataBodySize(0) {
			return fmt.Errorf("%w: data frame of %d bytes", wire.ErrCorrupt, n)
		}
		if _, err := io.ReadFull(br, hdr[wire.HeaderSize:]); err != nil {
			return err
		}
		dest, count := wire.ParseDataHeader(hdr[wire.HeaderSize:])
		size := n - wire.DataBodySize(0)
		if err := g.checkData(dest, count, size); err != nil {
			return err
		}
		b := g.NewBatch(dest)
		if cap(b.Buf) < size {
			b.Buf = make([]byte, size)
		}
		b.Buf = b.Buf[:size]
		b.Count = count
		if _, err := io.ReadFull(br, b.Buf); err != nil {
			g.recycle(b)
			return err
		}
		if err := g.deliverBatch(s, nil, b); err != nil {
			return nil // the session ended
		}
	}
}

// errSessionEnded stops the delivery of a frame whose session ended.
var errSessionEnded = errors.New("the stream manager session ended")

// checkData checks a data frame's header.
func (g *gateway) checkData(dest uint32, count, size int) error {
	if uint64(count) > uint64(size) {
		return fmt.Errorf("%w: data frame claims %d tuples in %d bytes", wire.ErrCorrupt, count, size)
	}
	if int(dest) != g.cfg.TaskID {
		return fmt.Errorf("%w: data frame for task %d delivered to task %d", wire.ErrCorrupt, dest, g.cfg.TaskID)
	}
	return nil
}

// deliverBatch puts an inbound batch on the inbox once the inbound budget
// has room; errSessionEnded (and b recycled) when the session ended or
// stop was closed first.
func (g *gateway) deliverBatch(s *session, stop <-chan struct{}, b *wire.Batch) error {
	size := len(b.Buf)
	if !g.in.acquire(s.done, stop, size) {
		g.recycle(b)
		return errSessionEnded
	}
	g.stats.TuplesIn.Add(int64(b.Count))
	select {
	case g.inbox <- instance.Msg{Kind: instance.MsgData, Batch: b}:
		return nil
	case <-s.done:
	case <-stop:
	}
	g.in.release(size)
	g.recycle(b)
	return errSessionEnded
}

// handleControl acts on a frame from the stream manager other than data:
// acking results, checkpoint messages and barriers go to the inbox, a new
// plan to the main loop (and the layout change it makes to the inbox,
// before any frame that follows the plan). errSessionEnded when the
// session ended or stop was closed first.
func (g *gateway) handleControl(s *session, stop <-chan struct{}, t wire.FrameType, payload []byte) error {
	if t == wire.FrameAckResult {
		return g.deliverResults(s, stop, payload)
	}
	if t == wire.FrameBarrier {
		b, err := wire.ParseBarrier(payload)
		if err != nil {
			return err
		}
		return g.deliver(s, stop, instance.Msg{Kind: instance.MsgBarrier, Barrier: b})
	}
	m, err := wire.DecodeMessage(t, payload)
	if err != nil {
		return err
	}
	if msg, ok := checkpointMsg(m); ok {
		return g.deliver(s, stop, msg)
	}
	np, ok := m.(*egretpb.NewPhysicalPlan)
	if !ok {
		return fmt.Errorf("%w: unexpected %s from the stream manager", wire.ErrCorrupt, t)
	}
	select {
	case s.plans <- np.GetPplan():
	case <-s.done:
		return errSessionEnded
	case <-stop:
		return errSessionEnded
	}
	// Data after the plan may be routed by its layout: the instance
	// switches to it first.
	select {
	case r := <-s.applied:
		if r != nil {
			return g.deliver(s, stop, instance.Msg{Kind: instance.MsgLayout, Relayout: r})
		}
		return nil
	case <-s.done:
	case <-stop:
	}
	return errSessionEnded
}

// writeLoop writes the outbound queue, flushing whenever it is empty.
func (g *gateway) writeLoop(s *session) error {
	bw := bufio.NewWriterSize(s.conn, writeBufferBytes)
	hdr := make([]byte, dataHeader)
	batch := wire.CacheLineSlice[*wire.Batch]()
	for {
		batch = g.out.PopAll(batch[:0])
		if len(batch) == 0 {
			if bw.Buffered() > 0 {
				if err := bw.Flush(); err != nil {
					return err
				}
			}
			select {
			case <-g.out.Ready():
				continue
			case <-s.done:
				return nil
			}
		}
		size, tuples := 0, int64(0)
		for i, b := range batch {
			var err error
			if b.Dest != ctlDest {
				hdr = wire.AppendDataHeader(hdr[:0], b.Dest, b.Count, len(b.Buf))
				_, err = bw.Write(hdr)
			}
			if err == nil {
				_, err = bw.Write(b.Buf)
			}
			if err != nil {
				for _, r := range batch[i:] {
					size += batchSize(r)
					g.stats.TuplesLost.Add(int64(r.Count))
					g.recycle(r)
				}
				clear(batch)
				g.out.Release(size)
				return err
			}
			size += batchSize(b)
			tuples += int64(b.Count)
			g.recycle(b)
		}
		clear(batch)
		g.out.Release(size)
		g.stats.TuplesOut.Add(tuples)
	}
}

// Send implements instance.Transport. While the stream manager is
// connected a full queue blocks (in a direct session: a full destination
// or back pressure); while it is not, batches beyond the queue's bound are
// dropped and counted.
func (g *gateway) Send(ctx context.Context, b *wire.Batch) error { return g.push(ctx, b) }

// Idle implements instance.Transport: nothing is queued or being written
// (in a direct session: nothing is queued toward dest).
func (g *gateway) Idle(dest uint32) bool {
	if d := g.direct.Load(); d != nil {
		return d.sink.Idle(dest)
	}
	return g.out.Empty()
}

// NewBatch implements instance.Transport.
func (g *gateway) NewBatch(dest uint32) *wire.Batch {
	b := g.pool.Get().(*wire.Batch)
	b.Reset(dest)
	return b
}

// Done implements instance.Transport: an inbound batch was consumed.
func (g *gateway) Done(b *wire.Batch) {
	g.in.release(len(b.Buf))
	g.recycle(b)
}

// SendAcks implements instance.Transport: the updates go to the stream
// manager as one frame, in order with the data batches, so registrations
// sent before a batch reach the ledger ahead of its tuples.
func (g *gateway) SendAcks(ctx context.Context, kind wire.FrameType, updates []wire.AckUpdate) error {
	for len(updates) > 0 {
		n := min(len(updates), wire.MaxAckUpdates)
		b := g.NewBatch(ctlDest)
		b.Buf = wire.AppendAckFrame(b.Buf, kind, updates[:n])
		if err := g.push(ctx, b); err != nil {
			g.acks.updatesLost.Add(int64(n))
			return err
		}
		g.acks.updatesOut.Add(int64(n))
		updates = updates[n:]
	}
	return nil
}

// deliverResults hands a FrameAckResult frame's results to the spout.
func (g *gateway) deliverResults(s *session, stop <-chan struct{}, payload []byte) error {
	results, err := wire.DecodeAckResults(payload, nil)
	if err != nil {
		return err
	}
	g.acks.resultsIn.Add(int64(len(results)))
	return g.deliver(s, stop, instance.Msg{Kind: instance.MsgAckResults, Acks: results})
}

// checkpointMsg turns an effectively-once control message of the stream
// manager into the instance's message.
func checkpointMsg(m proto.Message) (instance.Msg, bool) {
	switch m := m.(type) {
	case *egretpb.RestoreInstanceState:
		return instance.Msg{Kind: instance.MsgRestore, Checkpoint: m.GetCheckpointId(), Epoch: m.GetEpoch(), State: m.GetState(), OldTasks: m.GetOldTasks()}, true
	case *egretpb.StartProcessing:
		return instance.Msg{Kind: instance.MsgStartProcessing, Epoch: m.GetEpoch()}, true
	case *egretpb.CheckpointComplete:
		return instance.Msg{Kind: instance.MsgCheckpointComplete, Checkpoint: m.GetCheckpointId(), Epoch: m.GetEpoch()}, true
	}
	return instance.Msg{}, false
}

// deliver puts m on the inbox; errSessionEnded when the session ended or
// stop was closed first.
func (g *gateway) deliver(s *session, stop <-chan struct{}, m instance.Msg) error {
	select {
	case g.inbox <- m:
		return nil
	case <-s.done:
	case <-stop:
	}
	return errSessionEnded
}

// SendFrame implements instance.FrameSender: frame goes to the stream
// manager in order with the batches queued before it.
func (g *gateway) SendFrame(ctx context.Context, frame []byte) error {
	b := g.NewBatch(ctlDest)
	b.Buf = append(b.Buf[:0], frame...)
	return g.push(ctx, b)
}

// Inbox implements instance.Transport.
func (g *gateway) Inbox() <-chan instance.Msg { return g.inbox }

func (g *gateway) recycle(b *wire.Batch) {
	if cap(b.Buf) > maxPooledBatch {
		b.Buf = nil
	}
	g.pool.Put(b)
}

// budget bounds the bytes of inbound batches the instance has not
// consumed yet; the reader waits for room (so the stream manager's queue
// toward this instance fills and pushes back).
type budget struct {
	mu    sync.Mutex
	used  int
	max   int
	space chan struct{}
}

func (b *budget) init(max int) {
	b.max = max
	b.space = make(chan struct{}, 1)
}

// acquire waits for room for n bytes; false when done or stop was closed
// first.
func (b *budget) acquire(done, stop <-chan struct{}, n int) bool {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return true
		}
		b.mu.Unlock()
		select {
		case <-b.space:
		case <-done:
			return false
		case <-stop:
			return false
		}
	}
}

func (b *budget) bytes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

func (b *budget) release(n int) {
	b.mu.Lock()
	b.used = max(b.used-n, 0)
	b.mu.Unlock()
	select {
	case b.space <- struct{}{}:
	default:
	}
}
