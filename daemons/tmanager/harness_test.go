package tmanager

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/statemgr/memory"
)

const (
	testName = "wordcount"
	testID   = "wordcount-4f2a"
	waitMax  = 10 * time.Second
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitMax)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// ---- topology fixtures ----

func testTopology(spouts, bolts int) *topology.Topology {
	return &topology.Topology{
		Name: testName, ID: testID,
		Components: []topology.Component{
			{Name: "words", Kind: topology.Spout, Parallelism: spouts,
				Outputs: []topology.Stream{{ID: topology.DefaultStream, Fields: []string{"word"}}}},
			{Name: "count", Kind: topology.Bolt, Parallelism: bolts,
				Outputs: []topology.Stream{{ID: topology.DefaultStream, Fields: []string{"word", "n"}}},
				Inputs:  []topology.Input{{Component: "words", Stream: topology.DefaultStream, Grouping: topology.Fields, Fields: []string{"word"}}}},
		},
	}
}

// twoContainers: words 1,2 and count 3,4 over containers 1 and 2.
func twoContainers() *plan.PackingPlan {
	return &plan.PackingPlan{TopologyID: testID, Containers: []plan.Container{
		{ID: 1, Instances: []plan.Instance{{Component: "words", TaskID: 1, Index: 0}, {Component: "count", TaskID: 3, Index: 0}}},
		{ID: 2, Instances: []plan.Instance{{Component: "words", TaskID: 2, Index: 1}, {Component: "count", TaskID: 4, Index: 1}}},
	}}
}

// threeContainers adds words task 5 in container 3.
func threeContainers() *plan.PackingPlan {
	p := twoContainers()
	p.Containers = append(p.Containers, plan.Container{ID: 3, Instances: []plan.Instance{{Component: "words", TaskID: 5, Index: 2}}})
	return p
}

// ---- environment: a memory state store with a submitted topology ----

type env struct {
	store *memory.Store
	admin *memory.Session
	st    *state.Store
}

func newEnv(t testing.TB, deployDeactivated bool) *env {
	t.Helper()
	ms := memory.NewStore(memory.WithSessionTimeout(time.Second))
	admin := ms.NewSession()
	t.Cleanup(func() { _ = admin.Close() })
	e := &env{store: ms, admin: admin, st: state.New(admin)}
	err := e.st.Submit(context.Background(), state.Submission{
		Topology: testTopology(2, 2), Plan: twoContainers(),
		ExecutionState: &egretpb.ExecutionState{TopologyName: testName, TopologyId: testID, DeployDeactivated: deployDeactivated},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// tm is one running topology manager.
type tm struct {
	ep      Endpoints
	session *memory.Session
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
	ready   chan struct{}
	logs    *observer.ObservedLogs
}

type tmOption func(*Config)

func withSettings(kv ...string) tmOption {
	return func(c *Config) {
		for i := 0; i+1 < len(kv); i += 2 {
			c.Settings[kv[i]] = kv[i+1]
		}
	}
}

func withClock(c Clock) tmOption { return func(cfg *Config) { cfg.Clock = c } }

// launch starts a topology manager with a new session and does not wait
// for it to be ready.
func (e *env) launch(t *testing.T, opts ...tmOption) *tm {
	t.Helper()
	sess := e.store.NewSession()
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))
	m := &tm{session: sess, done: make(chan struct{}), ready: make(chan struct{}), logs: logs}
	cfg := Config{
		TopologyName: testName, TopologyID: testID, Host: "127.0.0.1", BindHost: "127.0.0.1",
		StateManager: sess, Settings: spi.Config{},
		Ready: func(ep Endpoints) { m.ep = ep; close(m.ready) },
	}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		m.err = Run(ctx, cfg, log)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-m.done:
		case <-time.After(waitMax):
			t.Errorf("topology manager did not stop")
		}
		_ = sess.Close()
	})
	return m
}

// start launches a topology manager and waits until it is ready.
func (e *env) start(t *testing.T, opts ...tmOption) *tm {
	t.Helper()
	m := e.launch(t, opts...)
	select {
	case <-m.ready:
	case <-m.done:
		t.Fatalf("topology manager exited: %v", m.err)
	case <-time.After(waitMax):
		t.Fatal("topology manager did not become ready")
	}
	return m
}

// wait waits for Run to return and returns its error.
func (m *tm) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-m.done:
		return m.err
	case <-time.After(waitMax):
		t.Fatal("topology manager did not exit")
		return nil
	}
}

func (m *tm) url(path string) string { return "http://" + m.ep.HTTPAddr + path }

var httpClient = &http.Client{Timeout: waitMax}

// do sends an HTTP request and returns the status and the decoded body.
func (m *tm) do(t *testing.T, method, path, contentType, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, m.url(path), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %v\n%s", method, path, err, b)
	}
	return resp.StatusCode, out
}

func (m *tm) health(t *testing.T) healthJSON {
	t.Helper()
	resp, err := httpClient.Get(m.url("/healthz"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h healthJSON
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// ---- fake stream manager ----

type fakeStmgr struct {
	t      *testing.T
	conn   net.Conn
	msgs   chan proto.Message
	closed chan struct{}
	stop   chan struct{}
	wmu    sync.Mutex
}

func dial(t *testing.T, addr string) *fakeStmgr {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, waitMax)
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeStmgr{t: t, conn: conn, msgs: make(chan proto.Message, 256), closed: make(chan struct{}), stop: make(chan struct{})}
	t.Cleanup(func() { close(s.stop); _ = conn.Close() })
	go func() {
		defer close(s.closed)
		r := bufio.NewReader(conn)
		var buf []byte
		for {
			ft, payload, nb, err := wire.ReadFrame(r, buf, wire.DefaultMaxFrame)
			buf = nb
			if err != nil {
				return
			}
			m, err := wire.DecodeMessage(ft, payload)
			if err != nil {
				m = &egretpb.StMgrHelloResponse{Error: "fake stmgr: undecodable frame: " + err.Error()}
			}
			select {
			case s.msgs <- m:
			case <-s.stop:
				return
			}
		}
	}()
	return s
}

func (s *fakeStmgr) send(m proto.Message) {
	s.t.Helper()
	b, err := wire.AppendMessage(nil, m)
	if err != nil {
		s.t.Fatal(err)
	}
	s.write(b)
}

func (s *fakeStmgr) write(b []byte) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, _ = s.conn.Write(b)
}

// next returns the next message from the topology manager.
func (s *fakeStmgr) next() proto.Message {
	s.t.Helper()
	select {
	case m := <-s.msgs:
		return m
	case <-s.closed:
		select {
		case m := <-s.msgs:
			return m
		default:
		}
		s.t.Fatal("fake stmgr: connection closed while waiting for a message")
	case <-time.After(waitMax):
		s.t.Fatal("fake stmgr: no message from the topology manager")
	}
	return nil
}

func (s *fakeStmgr) register(container, port int) *egretpb.StMgrRegisterResponse {
	s.t.Helper()
	return s.registerAs(testID, container, port)
}

func (s *fakeStmgr) registerAs(id string, container, port int) *egretpb.StMgrRegisterResponse {
	s.t.Helper()
	s.send(&egretpb.StMgrRegisterRequest{TopologyId: id,
		Location: &egretpb.StMgrLocation{Container: int32(container), Host: "127.0.0.1", DataPort: int32(port)}})
	m := s.next()
	resp, ok := m.(*egretpb.StMgrRegisterResponse)
	if !ok {
		s.t.Fatalf("expected StMgrRegisterResponse, got %T %v", m, m)
	}
	return resp
}

// plan waits for a NewPhysicalPlan with the given version, skipping older
// ones and heartbeat responses.
func (s *fakeStmgr) plan(version uint64) *egretpb.PhysicalPlan {
	s.t.Helper()
	for {
		m := s.next()
		np, ok := m.(*egretpb.NewPhysicalPlan)
		if !ok {
			continue
		}
		switch v := np.GetPplan().GetVersion(); {
		case v == version:
			return np.GetPplan()
		case v > version:
			s.t.Fatalf("expected physical plan version %d, got %d", version, v)
		}
	}
}

func (s *fakeStmgr) heartbeat(container int) *egretpb.StMgrHeartbeatResponse {
	s.t.Helper()
	s.send(&egretpb.StMgrHeartbeat{Container: int32(container), SentUnixNanos: time.Now().UnixNano()})
	for {
		if r, ok := s.next().(*egretpb.StMgrHeartbeatResponse); ok {
			return r
		}
	}
}

// waitClosed waits until the topology manager closed the connection.
func (s *fakeStmgr) waitClosed() {
	s.t.Helper()
	select {
	case <-s.closed:
	case <-time.After(waitMax):
		s.t.Fatal("the topology manager did not close the connection")
	}
}

// noPlanPending reports that no plan arrived (checked after a round trip
// that the topology manager answers in order).
func (s *fakeStmgr) noPlanPending(container int) {
	s.t.Helper()
	s.send(&egretpb.StMgrHeartbeat{Container: int32(container)})
	for {
		switch m := s.next().(type) {
		case *egretpb.StMgrHeartbeatResponse:
			return
		case *egretpb.NewPhysicalPlan:
			s.t.Fatalf("unexpected physical plan version %d", m.GetPplan().GetVersion())
		}
	}
}

// registerAll registers the stream managers of containers 1..n and returns
// them with the first plan (version want).
func registerAll(t *testing.T, m *tm, n int, want uint64) ([]*fakeStmgr, *egretpb.PhysicalPlan) {
	t.Helper()
	var out []*fakeStmgr
	var pp *egretpb.PhysicalPlan
	for c := 1; c <= n; c++ {
		s := dial(t, m.ep.ServerAddr)
		resp := s.register(c, 7000+c)
		if resp.GetError() != "" {
			t.Fatalf("register container %d: %s", c, resp.GetError())
		}
		out = append(out, s)
	}
	for _, s := range out {
		pp = s.plan(want)
	}
	return out, pp
}

// ---- fake clock ----

type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*fakeTicker
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	c  chan time.Time
}

type fakeTicker struct {
	c       chan time.Time
	period  time.Duration
	next    time.Time
	stopped bool
	clk     *fakeClock
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), c: ch})
	return ch
}

func (c *fakeClock) NewTicker(d time.Duration) Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTicker{c: make(chan time.Time, 1), period: d, next: c.now.Add(d), clk: c}
	c.tickers = append(c.tickers, t)
	return t
}

func (c *fakeClock) tickerCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tickers)
}

// Advance moves the clock and fires what became due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.tickers {
		if t.stopped || t.next.After(c.now) {
			continue
		}
		select {
		case t.c <- c.now:
		default:
		}
		for !t.next.After(c.now) {
			t.next = t.next.Add(t.period)
		}
	}
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.c <- c.now
	}
	c.waiters = kept
}

func (t *fakeTicker) C() <-chan time.Time { return t.c }

func (t *fakeTicker) Stop() {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	t.stopped = true
}

// statePlan reads /pplans/<name>.
func (e *env) statePlan(t *testing.T) *egretpb.PhysicalPlan {
	t.Helper()
	pp, err := e.st.PhysicalPlan(context.Background(), testName)
	if err != nil {
		t.Fatal(err)
	}
	return pp
}

func isLost(err error) bool { return errors.Is(err, ErrLocationLost) }

func describe(pp *egretpb.PhysicalPlan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "v%d %s", pp.GetVersion(), stateName(pp.GetState()))
	for _, s := range pp.GetStmgrs() {
		fmt.Fprintf(&b, " %d@%s:%d", s.GetContainer(), s.GetHost(), s.GetDataPort())
	}
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

func zapNop() *zap.Logger { return zap.NewNop() }
