package zookeeper

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/zktest"
	"github.com/egret-stream/egret/statemgr/statemgrtest"
)

// cutter is a dialer whose connections a test can cut, and which can refuse
// to reconnect: a process that lost its network (or died) without closing
// its session.
type cutter struct {
	mu     sync.Mutex
	conns  []net.Conn
	refuse bool
}

func (c *cutter) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refuse {
		return nil, errors.New("test refuses to reconnect")
	}
	conn, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		c.conns = append(c.conns, conn)
	}
	return conn, err
}

// cut closes the open connections; with refuse, no new ones are made.
func (c *cutter) cut(refuse bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuse = refuse
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

func (c *cutter) allow() {
	c.mu.Lock()
	c.refuse = false
	c.mu.Unlock()
}

// sessions opens sessions on one ZooKeeper and remembers their cutters.
type sessions struct {
	addr    string
	root    string
	timeout time.Duration
	mu      sync.Mutex
	cutters map[spi.StateManager]*cutter
}

func newSessions(addr, root string, timeout time.Duration) *sessions {
	return &sessions{addr: addr, root: root, timeout: timeout, cutters: map[spi.StateManager]*cutter{}}
}

func (s *sessions) open(t *testing.T) spi.StateManager {
	t.Helper()
	c := &cutter{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sm, err := Open(ctx, Options{Servers: []string{s.addr}, Root: s.root, SessionTimeout: s.timeout, Dialer: c.dial})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sm.Close() })
	s.mu.Lock()
	s.cutters[sm] = c
	s.mu.Unlock()
	return sm
}

func (s *sessions) cutter(sm spi.StateManager) *cutter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cutters[sm]
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConformance(t *testing.T) {
	addr := zktest.Start(t)
	ss := newSessions(addr, "/egret-conformance", 5*time.Second)
	statemgrtest.Run(t, ss.open)
}

func TestExpiry(t *testing.T) {
	addr := zktest.Start(t)
	// 3s rather than 1s: a loaded machine must not starve a live session.
	ss := newSessions(addr, "/egret-expiry", 3*time.Second)
	statemgrtest.RunExpiry(t, ss.open, func(t *testing.T, sm spi.StateManager) { ss.cutter(sm).cut(true) })
}

// TestEphemeralLocationHeldUntilExpiry is the property the topology
// manager's uniqueness rests on: while the first session lives (even cut
// off from the server), nobody else can take its ephemeral location; once
// the session expires, someone else can.
func TestEphemeralLocationHeldUntilExpiry(t *testing.T) {
	addr := zktest.Start(t)
	ctx := ctxFor(t)
	first := newSessions(addr, "/egret", 5*time.Second).open(t)
	ss := newSessions(addr, "/egret", 5*time.Second)
	second := ss.open(t)
	loc := "/tmanagers/wordcount"
	if err := first.Create(ctx, loc, []byte("first"), true); err != nil {
		t.Fatal(err)
	}
	if err := second.Create(ctx, loc, []byte("second"), true); !errors.Is(err, spi.ErrExists) {
		t.Fatalf("second session created a live ephemeral location: %v", err)
	}

	// Kill the first session's TCP connection without closing the session.
	fc := &cutter{}
	cutOpen, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	victim, err := Open(cutOpen, Options{Servers: []string{addr}, Root: "/egret", SessionTimeout: 2 * time.Second, Dialer: fc.dial})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := victim.Create(ctx, loc, []byte("victim"), true); err != nil {
		t.Fatal(err)
	}
	fc.cut(true)
	cutAt := time.Now()
	if err := second.Create(ctx, loc, []byte("second"), true); !errors.Is(err, spi.ErrExists) {
		t.Fatalf("second session took the location of a live (cut off) session: %v", err)
	}
	n, err := second.Get(ctx, loc)
	if err != nil || string(n.Data) != "victim" || !n.Ephemeral {
		t.Fatalf("location = %+v, %v; want the victim's ephemeral node", n, err)
	}
	waitFor(t, "second session takes the location after the first expired", 20*time.Second, func() bool {
		err := second.Create(ctx, loc, []byte("second"), true)
		if err != nil && !errors.Is(err, spi.ErrExists) {
			t.Fatal(err)
		}
		return err == nil
	})
	t.Logf("location taken over %v after the connection was cut (session timeout 2s)", time.Since(cutAt).Round(time.Millisecond))
}

func TestReconnectKeepsSession(t *testing.T) {
	addr := zktest.Start(t)
	ctx := ctxFor(t)
	ss := newSessions(addr, "/egret", 5*time.Second)
	s1 := ss.open(t)
	if err := s1.Create(ctx, "/eph", nil, true); err != nil {
		t.Fatal(err)
	}
	id := s1.(*StateManager).SessionID()
	ss.cutter(s1).cut(false)
	// The client reconnects with the same session; the node stays.
	waitFor(t, "session reconnected", 20*time.Second, func() bool {
		n, err := s1.Get(ctx, "/eph")
		return err == nil && n.Ephemeral
	})
	if got := s1.(*StateManager).SessionID(); got != id {
		t.Fatalf("session id changed from %x to %x on a reconnect within the timeout", id, got)
	}
}

func TestSessionExpiryReported(t *testing.T) {
	addr := zktest.Start(t)
	ctx := ctxFor(t)
	ss := newSessions(addr, "/egret", time.Second)
	s1, s2 := ss.open(t), ss.open(t)
	if err := s1.Create(ctx, "/eph", []byte("1"), true); err != nil {
		t.Fatal(err)
	}
	events, err := s1.Watch(ctx, "/eph")
	if err != nil {
		t.Fatal(err)
	}
	id := s1.(*StateManager).SessionID()
	c := ss.cutter(s1)
	c.cut(true)
	waitFor(t, "ephemeral node of the cut-off session expires", 20*time.Second, func() bool {
		_, err := s2.Get(ctx, "/eph")
		return errors.Is(err, spi.ErrNotFound)
	})
	c.allow()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	for lost := false; !lost; {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("watch ended instead of reporting the session loss")
			}
			lost = e.Type == spi.EventSessionLost
		case <-timer.C:
			t.Fatal("no EventSessionLost after the session expired")
		}
	}
	// The state manager goes on with a new session.
	waitFor(t, "new session recreates the node", 20*time.Second, func() bool {
		return s1.Create(ctx, "/eph", []byte("again"), true) == nil
	})
	if s1.(*StateManager).SessionID() == id {
		t.Fatal("session id unchanged after expiry")
	}
	// And the watch keeps working.
	timer.Reset(20 * time.Second)
	for created := false; !created; {
		select {
		case e := <-events:
			created = e.Type == spi.EventCreated
		case <-timer.C:
			t.Fatal("watch reports nothing after the session loss")
		}
	}
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	core, logs := observer.New(zap.WarnLevel)
	start := time.Now()
	sm, err := New(spi.Config{
		KeyConnectionString: addr,
		KeyConnectTimeout:   "1500ms",
	}, zap.New(core))
	if err == nil {
		sm.Close()
		t.Fatal("New succeeded without a ZooKeeper")
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("New took %v to give up", took)
	}
	for _, want := range []string{addr, KeyConnectionString, "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if logs.FilterMessageSnippet("failed to connect").Len() == 0 {
		t.Errorf("connection failures not logged through zap: %v", logs.All())
	}
}

func TestFactoryConfig(t *testing.T) {
	f, err := spi.LookupStateManager("zookeeper")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  spi.Config
		want string
	}{
		{"no connection string", spi.Config{}, KeyConnectionString + " is not set"},
		{"not host:port", spi.Config{KeyConnectionString: "localhost"}, `"localhost" is not host:port`},
		{"chroot", spi.Config{KeyConnectionString: "localhost:2181/egret"}, "chroot"},
		{"relative root", spi.Config{KeyConnectionString: "localhost:2181", KeyRootPath: "egret"}, KeyRootPath},
		{"bad timeout", spi.Config{KeyConnectionString: "localhost:2181", KeySessionTimeout: "ten"}, KeySessionTimeout},
	} {
		_, err := f(tc.cfg, zap.NewNop())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}

	addr := zktest.Start(t)
	ctx := ctxFor(t)
	sm, err := f(spi.Config{KeyConnectionString: addr, KeyRootPath: "/cfg/root", KeySessionTimeout: "3s"}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	if sm.SessionTimeout() != 3*time.Second {
		t.Errorf("SessionTimeout = %v", sm.SessionTimeout())
	}
	if err := sm.Create(ctx, "/topologies/wc", []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	// The node lives below the configured root.
	raw := newSessions(addr, "/", 3*time.Second).open(t)
	n, err := raw.Get(ctx, "/cfg/root/topologies/wc")
	if err != nil || string(n.Data) != "x" {
		t.Fatalf("node below root: %+v, %v", n, err)
	}
	kids, err := raw.Children(ctx, "/")
	if err != nil || !strings.Contains(strings.Join(kids, ","), "cfg") {
		t.Fatalf("children of / = %v, %v", kids, err)
	}
}

// TestMultiReplansOnConcurrentChange changes the tree between planning and
// committing a transaction: a child appears below a subtree being deleted,
// a parent to be created appears, a node listed for deletion vanishes. The
// transaction must be planned again and still apply atomically.
func TestMultiReplansOnConcurrentChange(t *testing.T) {
	addr := zktest.Start(t)
	ctx := ctxFor(t)
	ss := newSessions(addr, "/egret", 5*time.Second)
	s1, s2 := ss.open(t), ss.open(t)
	for _, p := range []string{"/tree/a/leaf", "/tree/b/leaf", "/gone/x"} {
		if err := s1.Create(ctx, p, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	attempts := 0
	s1.(*StateManager).beforeCommit = func(attempt int) {
		attempts = attempt + 1
		switch attempt {
		case 0:
			if err := s2.Create(ctx, "/tree/a/late", nil, false); err != nil {
				t.Error(err)
			}
		case 1:
			if err := s2.Create(ctx, "/new", []byte("other"), false); err != nil {
				t.Error(err)
			}
		case 2:
			if err := s2.Delete(ctx, "/gone/x", spi.AnyVersion); err != nil {
				t.Error(err)
			}
		}
	}
	err := s1.Multi(ctx,
		spi.Op{Kind: spi.OpDelete, Path: "/tree", Version: spi.AnyVersion},
		spi.Op{Kind: spi.OpDelete, Path: "/gone", Version: spi.AnyVersion},
		spi.Op{Kind: spi.OpCreate, Path: "/new/child", Data: []byte("c")},
	)
	s1.(*StateManager).beforeCommit = nil
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 4 {
		t.Errorf("transaction planned %d times, want 4", attempts)
	}
	for _, p := range []string{"/tree", "/tree/a/late", "/gone"} {
		if _, err := s1.Get(ctx, p); !errors.Is(err, spi.ErrNotFound) {
			t.Errorf("%s survived the delete: %v", p, err)
		}
	}
	if n, err := s1.Get(ctx, "/new/child"); err != nil || string(n.Data) != "c" {
		t.Errorf("/new/child = %+v, %v", n, err)
	}
}
