package statemgrtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/spi/spitest"
)

// NewSession returns a new session of the store under test. Every call
// must return a new session against the same store, so that ephemeral nodes,
// watches and locks can be checked across sessions. The suite closes every
// session it gets (possibly twice: Close must be idempotent).
type NewSession func(t *testing.T) spi.StateManager

// Kill ends sm the way a crashed process would: without Close, so that
// its ephemeral nodes and locks disappear only when the backend notices
// (after SessionTimeout). For ZooKeeper: drop the TCP connection and refuse
// to reconnect; for a lease-based backend: stop refreshing the lease.
type Kill func(t *testing.T, sm spi.StateManager)

// Open is NewSession for suites that also run outside go test (egret
// plugin verify): it returns a new session, or an error that fails the
// check.
type Open func(ctx context.Context) (spi.StateManager, error)

// Crash is Kill for suites that also run outside go test: it ends sm the
// way a crashed process would, or returns why it cannot.
type Crash func(ctx context.Context, sm spi.StateManager) error

// session returns a new session for a check.
type session func(t spitest.T) spi.StateManager

func fromNewSession(newSession NewSession) session {
	return func(t spitest.T) spi.StateManager {
		t.Helper()
		tt := spitest.Testing(t)
		if tt == nil {
			t.Fatal("statemgrtest: NewSession needs go test (a *testing.T); use RunOpen to run the suite elsewhere")
		}
		return newSession(tt)
	}
}

func fromOpen(open Open) session {
	return func(t spitest.T) spi.StateManager {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		sm, err := open(ctx)
		if err != nil {
			t.Fatalf("open a session: %v", err)
		}
		return sm
	}
}

// Timing of the suite.
const (
	// opTimeout bounds each test's operations.
	opTimeout = 60 * time.Second
	// eventWait is how long a watch event may take to arrive.
	eventWait = 15 * time.Second
	// heldWait is how long a second session tries a held lock.
	heldWait = 300 * time.Millisecond
)

type suite struct {
	newSession session
	base       string
}

// Run runs the conformance suite against the store behind newSession. All
// nodes are created below a fresh random top-level node, which is deleted
// at the end, so the suite may run against a shared store.
func Run(t spitest.T, newSession NewSession) { run(t, fromNewSession(newSession)) }

// RunOpen is Run for sessions that open returns; unlike Run it also runs
// outside go test.
func RunOpen(t spitest.T, open Open) { run(t, fromOpen(open)) }

func run(t spitest.T, newSession session) {
	s := &suite{newSession: newSession, base: "/conformance-" + randomName()}
	t.Cleanup(func() {
		sm := newSession(t)
		defer sm.Close()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := sm.Delete(ctx, s.base, spi.AnyVersion); err != nil {
			t.Errorf("cleanup: delete %s: %v", s.base, err)
		}
	})
	for _, tc := range []struct {
		name string
		f    func(spitest.T, *suite, string)
	}{
		{"CreateGet", testCreateGet},
		{"CreateMakesParents", testCreateParents},
		{"DataIsCopied", testDataCopied},
		{"BinaryAndLargeData", testBinaryData},
		{"SetVersions", testSetVersions},
		{"Delete", testDelete},
		{"DeleteRecursive", testDeleteRecursive},
		{"ChildrenSorted", testChildren},
		{"MultiApplies", testMultiApplies},
		{"MultiSequential", testMultiSequential},
		{"MultiAtomic", testMultiAtomic},
		{"MultiRecursiveDelete", testMultiRecursiveDelete},
		{"Ephemeral", testEphemeral},
		{"EphemeralNoChildren", testEphemeralNoChildren},
		{"EphemeralTakeover", testEphemeralTakeover},
		{"Watch", testWatch},
		{"WatchEphemeralClose", testWatchEphemeralClose},
		{"WatchEndsWithContext", testWatchEnds},
		{"Lock", testLock},
		{"LockReleasedByClose", testLockClose},
		{"InvalidPaths", testInvalidPaths},
		{"ConcurrentSets", testConcurrentSets},
		{"ConcurrentCompareAndSet", testConcurrentCAS},
		{"ClosedSession", testClosed},
	} {
		spitest.Run(t, tc.name, func(t spitest.T) {
			tc.f(t, s, s.base+"/"+tc.name)
		})
	}
}

// RunExpiry checks what happens when a session dies without Close: its
// ephemeral nodes and locks disappear within SessionTimeout plus a margin,
// another session's watch reports the deletion, and other sessions can then
// take the ephemeral path and the lock. It also checks that a live
// session's ephemeral node outlives SessionTimeout. Configure the backend
// with a short session timeout (about a second): the test waits for it.
func RunExpiry(t spitest.T, newSession NewSession, kill Kill) {
	runExpiry(t, fromNewSession(newSession), func(t spitest.T, sm spi.StateManager) {
		kill(spitest.Testing(t), sm)
	})
}

// RunExpiryOpen is RunExpiry for sessions that open returns, ended by
// crash; unlike RunExpiry it also runs outside go test.
func RunExpiryOpen(t spitest.T, open Open, crash Crash) {
	runExpiry(t, fromOpen(open), func(t spitest.T, sm spi.StateManager) {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := crash(ctx, sm); err != nil {
			t.Fatalf("crash a session: %v", err)
		}
	})
}

func runExpiry(t spitest.T, newSession session, kill func(spitest.T, spi.StateManager)) {
	base := "/expiry-" + randomName()
	ctx := testContext(t)
	s1, s2 := newSession(t), newSession(t)
	t.Cleanup(func() { s1.Close(); s2.Close() })
	t.Cleanup(func() {
		if err := s2.Delete(context.Background(), base, spi.AnyVersion); err != nil {
			t.Errorf("cleanup: delete %s: %v", base, err)
		}
	})
	timeout := s1.SessionTimeout()
	if timeout <= 0 {
		t.Fatalf("SessionTimeout() = %v, want > 0", timeout)
	}
	eph, lock := base+"/eph", base+"/lock"
	must(t, s1.Create(ctx, eph, []byte("owner-1"), true))
	if _, err := s1.Lock(ctx, lock); err != nil {
		t.Fatalf("lock %s: %v", lock, err)
	}

	// A live session keeps its ephemeral node beyond SessionTimeout.
	alive := time.Now().Add(timeout * 3 / 2)
	for time.Now().Before(alive) {
		if _, err := s2.Get(ctx, eph); err != nil {
			t.Fatalf("ephemeral node of a live session vanished after %v (timeout %v): %v",
				time.Since(alive.Add(-timeout*3/2)), timeout, err)
		}
		time.Sleep(timeout / 10)
	}

	events, err := s2.Watch(ctx, eph)
	must(t, err)
	killed := time.Now()
	kill(t, s1)
	limit := 2*timeout + 5*time.Second
	deadline := killed.Add(limit)
	for {
		_, err := s2.Get(ctx, eph)
		if errors.Is(err, spi.ErrNotFound) {
			t.Logf("ephemeral node gone %v after the crash (session timeout %v)", time.Since(killed).Round(time.Millisecond), timeout)
			break
		}
		if err != nil {
			t.Fatalf("get %s: %v", eph, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("ephemeral node of a crashed session still exists %v after the crash (session timeout %v)", limit, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitEvent(t, events, spi.EventDeleted, eph)

	lctx, cancel := context.WithDeadline(ctx, deadline.Add(time.Second))
	defer cancel()
	unlock, err := s2.Lock(lctx, lock)
	if err != nil {
		t.Fatalf("lock of a crashed session not released within %v: %v", limit, err)
	}
	must(t, unlock())
	must(t, s2.Create(ctx, eph, []byte("owner-2"), true))
	n, err := s2.Get(ctx, eph)
	must(t, err)
	if string(n.Data) != "owner-2" || !n.Ephemeral {
		t.Errorf("after takeover got %q ephemeral=%v", n.Data, n.Ephemeral)
	}
}

func (s *suite) open(t spitest.T) spi.StateManager {
	t.Helper()
	sm := s.newSession(t)
	if sm == nil {
		t.Fatal("newSession returned nil")
	}
	t.Cleanup(func() {
		if err := sm.Close(); err != nil && !errors.Is(err, spi.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return sm
}

func testContext(t spitest.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

func randomName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func must(t spitest.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t spitest.T, what string, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: got error %v, want %v", what, err, sentinel)
	}
}

func wantNode(t spitest.T, sm spi.StateManager, path, data string, version int64, ephemeral bool) {
	t.Helper()
	n, err := sm.Get(testContext(t), path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	if string(n.Data) != data || n.Version != version || n.Ephemeral != ephemeral {
		t.Fatalf("get %s = {data %q version %d ephemeral %v}, want {data %q version %d ephemeral %v}",
			path, n.Data, n.Version, n.Ephemeral, data, version, ephemeral)
	}
}

func wantAbsent(t spitest.T, sm spi.StateManager, path string) {
	t.Helper()
	n, err := sm.Get(testContext(t), path)
	if !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("get %s = %+v, %v; want ErrNotFound", path, n, err)
	}
}

func eventually(t spitest.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %v", what, eventWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitEvent reads events until one of type want for path arrives. Other
// event types are tolerated (backends may report more than asked), but a
// closed channel, a lost session or the deadline fail the test.
func waitEvent(t spitest.T, ch <-chan spi.Event, want spi.EventType, path string) {
	t.Helper()
	timer := time.NewTimer(eventWait)
	defer timer.Stop()
	var seen []spi.Event
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("watch channel closed while waiting for %s on %s (seen %v)", eventName(want), path, seen)
			}
			if e.Type == spi.EventSessionLost {
				t.Fatalf("unexpected session loss while waiting for %s on %s", eventName(want), path)
			}
			if e.Path != path {
				t.Fatalf("event %s has path %q, want %q", eventName(e.Type), e.Path, path)
			}
			if e.Type == want {
				return
			}
			seen = append(seen, e)
		case <-timer.C:
			t.Fatalf("no %s event on %s within %v (seen %v)", eventName(want), path, eventWait, seen)
		}
	}
}

func eventName(e spi.EventType) string {
	switch e {
	case spi.EventCreated:
		return "EventCreated"
	case spi.EventDeleted:
		return "EventDeleted"
	case spi.EventDataChanged:
		return "EventDataChanged"
	case spi.EventChildrenChanged:
		return "EventChildrenChanged"
	case spi.EventSessionLost:
		return "EventSessionLost"
	}
	return "EventType(" + strconv.Itoa(int(e)) + ")"
}

func testCreateGet(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	must(t, sm.Create(ctx, p, []byte("hello"), false))
	wantNode(t, sm, p, "hello", 0, false)
	wantErr(t, "second create", sm.Create(ctx, p, []byte("again"), false), spi.ErrExists)
	wantNode(t, sm, p, "hello", 0, false)
	wantAbsent(t, sm, p+"/missing")
	must(t, sm.Create(ctx, p+"/empty", nil, false))
	n, err := sm.Get(ctx, p+"/empty")
	must(t, err)
	if len(n.Data) != 0 {
		t.Errorf("node created with nil data has data %q", n.Data)
	}
	// The root exists and cannot be created.
	if _, err := sm.Get(ctx, "/"); err != nil {
		t.Errorf("get /: %v", err)
	}
	wantErr(t, "create /", sm.Create(ctx, "/", nil, false), spi.ErrExists)
}

func testCreateParents(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	must(t, sm.Create(ctx, p+"/a/b/c", []byte("leaf"), false))
	wantNode(t, sm, p+"/a", "", 0, false)
	wantNode(t, sm, p+"/a/b", "", 0, false)
	wantNode(t, sm, p+"/a/b/c", "leaf", 0, false)
	kids, err := sm.Children(ctx, p+"/a")
	must(t, err)
	if strings.Join(kids, ",") != "b" {
		t.Errorf("children of %s/a = %v, want [b]", p, kids)
	}
	// A sibling below existing parents.
	must(t, sm.Create(ctx, p+"/a/b/d", nil, false))
	wantErr(t, "create existing parent", sm.Create(ctx, p+"/a", nil, false), spi.ErrExists)
}

func testDataCopied(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	data := []byte("original")
	must(t, sm.Create(ctx, p, data, false))
	copy(data, "XXXXXXXX")
	n, err := sm.Get(ctx, p)
	must(t, err)
	if string(n.Data) != "original" {
		t.Fatalf("changing the slice passed to Create changed the node: %q", n.Data)
	}
	n.Data[0] = 'Y'
	wantNode(t, sm, p, "original", 0, false)
	data = []byte("second")
	_, err = sm.Set(ctx, p, data, spi.AnyVersion)
	must(t, err)
	copy(data, "ZZZZZZ")
	wantNode(t, sm, p, "second", 1, false)
}

func testBinaryData(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}
	must(t, sm.Create(ctx, p+"/bin", bin, false))
	large := bytes.Repeat([]byte("0123456789abcdef\n"), 64<<10/17)
	must(t, sm.Create(ctx, p+"/large", large, false))
	for path, want := range map[string][]byte{p + "/bin": bin, p + "/large": large} {
		n, err := sm.Get(ctx, path)
		must(t, err)
		if !bytes.Equal(n.Data, want) {
			t.Errorf("get %s: data differs (%d bytes, want %d)", path, len(n.Data), len(want))
		}
	}
}

func testSetVersions(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	_, err := sm.Set(ctx, p, []byte("x"), spi.AnyVersion)
	wantErr(t, "set of a missing node", err, spi.ErrNotFound)
	wantAbsent(t, sm, p)

	must(t, sm.Create(ctx, p, []byte("v0"), false))
	v, err := sm.Set(ctx, p, []byte("v1"), spi.AnyVersion)
	must(t, err)
	if v != 1 {
		t.Fatalf("first set returned version %d, want 1", v)
	}
	v, err = sm.Set(ctx, p, []byte("v2"), 1)
	must(t, err)
	if v != 2 {
		t.Fatalf("conditional set returned version %d, want 2", v)
	}
	_, err = sm.Set(ctx, p, []byte("stale"), 1)
	wantErr(t, "set with a stale version", err, spi.ErrVersionConflict)
	wantNode(t, sm, p, "v2", 2, false)
	// Setting the same data still makes a new version.
	v, err = sm.Set(ctx, p, []byte("v2"), 2)
	must(t, err)
	if v != 3 {
		t.Fatalf("set returned version %d, want 3", v)
	}
	wantNode(t, sm, p, "v2", 3, false)
	// Setting the root works like any node.
	_, err = sm.Set(ctx, p+"/x", nil, 0)
	wantErr(t, "conditional set of a missing node", err, spi.ErrNotFound)
}

func testDelete(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	must(t, sm.Create(ctx, p+"/n", []byte("x"), false))
	_, err := sm.Set(ctx, p+"/n", []byte("y"), 0)
	must(t, err)
	wantErr(t, "delete with a wrong version", sm.Delete(ctx, p+"/n", 0), spi.ErrVersionConflict)
	wantNode(t, sm, p+"/n", "y", 1, false)
	must(t, sm.Delete(ctx, p+"/n", 1))
	wantAbsent(t, sm, p+"/n")
	must(t, sm.Delete(ctx, p+"/n", spi.AnyVersion))
	must(t, sm.Delete(ctx, p+"/n", 5))
	must(t, sm.Delete(ctx, p+"/never/existed", spi.AnyVersion))
	wantAbsent(t, sm, p+"/never")
	// A deleted node can be created again and starts at version 0.
	must(t, sm.Create(ctx, p+"/n", []byte("again"), false))
	wantNode(t, sm, p+"/n", "again", 0, false)
}

func testDeleteRecursive(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	for _, q := range []string{"/d/x/y/z", "/d/x/w", "/d/v", "/keep"} {
		must(t, sm.Create(ctx, p+q, []byte(q), false))
	}
	wantErr(t, "recursive delete with a wrong version", sm.Delete(ctx, p+"/d", 3), spi.ErrVersionConflict)
	wantNode(t, sm, p+"/d/x/y/z", "/d/x/y/z", 0, false)
	must(t, sm.Delete(ctx, p+"/d", 0))
	for _, q := range []string{"/d", "/d/x", "/d/x/y", "/d/x/y/z", "/d/x/w", "/d/v"} {
		wantAbsent(t, sm, p+q)
	}
	kids, err := sm.Children(ctx, p)
	must(t, err)
	if strings.Join(kids, ",") != "keep" {
		t.Errorf("children after recursive delete = %v, want [keep]", kids)
	}
}

func testChildren(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	for _, name := range []string{"zeta", "alpha", "Beta", "m-1", "m.0", "m_2", "10", "9"} {
		must(t, sm.Create(ctx, p+"/"+name, nil, false))
	}
	must(t, sm.Create(ctx, p+"/alpha/grandchild", nil, false))
	kids, err := sm.Children(ctx, p)
	must(t, err)
	want := "10,9,Beta,alpha,m-1,m.0,m_2,zeta"
	if strings.Join(kids, ",") != want {
		t.Errorf("children = %v, want %s (sorted, names only, no grandchildren)", kids, want)
	}
	kids, err = sm.Children(ctx, p+"/zeta")
	must(t, err)
	if len(kids) != 0 {
		t.Errorf("children of a leaf = %v", kids)
	}
	_, err = sm.Children(ctx, p+"/missing")
	wantErr(t, "children of a missing node", err, spi.ErrNotFound)
}

func testMultiApplies(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	must(t, sm.Create(ctx, p+"/set", []byte("old"), false))
	must(t, sm.Create(ctx, p+"/del/child", nil, false))
	must(t, sm.Create(ctx, p+"/chk", nil, false))
	must(t, sm.Multi(ctx,
		spi.Op{Kind: spi.OpCreate, Path: p + "/new/deep", Data: []byte("created")},
		spi.Op{Kind: spi.OpSet, Path: p + "/set", Data: []byte("new"), Version: 0},
		spi.Op{Kind: spi.OpDelete, Path: p + "/del", Version: spi.AnyVersion},
		spi.Op{Kind: spi.OpDelete, Path: p + "/absent", Version: spi.AnyVersion},
		spi.Op{Kind: spi.OpCheck, Path: p + "/chk", Version: 0},
		spi.Op{Kind: spi.OpCheck, Path: p + "/chk", Version: spi.AnyVersion},
	))
	wantNode(t, sm, p+"/new/deep", "created", 0, false)
	wantNode(t, sm, p+"/new", "", 0, false)
	wantNode(t, sm, p+"/set", "new", 1, false)
	wantAbsent(t, sm, p+"/del")
	wantAbsent(t, sm, p+"/del/child")
	must(t, sm.Multi(ctx))
}

func testMultiSequential(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	must(t, sm.Multi(ctx,
		spi.Op{Kind: spi.OpCreate, Path: p + "/a", Data: []byte("0")},
		spi.Op{Kind: spi.OpSet, Path: p + "/a", Data: []byte("1"), Version: 0},
		spi.Op{Kind: spi.OpCheck, Path: p + "/a", Version: 1},
		spi.Op{Kind: spi.OpCreate, Path: p + "/a/child", Data: []byte("c")},
		spi.Op{Kind: spi.OpCreate, Path: p + "/b"},
		spi.Op{Kind: spi.OpDelete, Path: p + "/b", Version: 0},
	))
	wantNode(t, sm, p+"/a", "1", 1, false)
	wantNode(t, sm, p+"/a/child", "c", 0, false)
	wantAbsent(t, sm, p+"/b")
}

func testMultiAtomic(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	must(t, sm.Create(ctx, p+"/existing", []byte("keep"), false))
	must(t, sm.Create(ctx, p+"/victim/child", []byte("keep"), false))
	for _, tc := range []struct {
		name    string
		failing spi.Op
		want    error
	}{
		{"create-exists", spi.Op{Kind: spi.OpCreate, Path: p + "/existing"}, spi.ErrExists},
		{"set-missing", spi.Op{Kind: spi.OpSet, Path: p + "/nosuchnode", Version: spi.AnyVersion}, spi.ErrNotFound},
		{"set-version", spi.Op{Kind: spi.OpSet, Path: p + "/existing", Version: 7}, spi.ErrVersionConflict},
		{"delete-version", spi.Op{Kind: spi.OpDelete, Path: p + "/existing", Version: 7}, spi.ErrVersionConflict},
		{"check-missing", spi.Op{Kind: spi.OpCheck, Path: p + "/nosuchnode", Version: spi.AnyVersion}, spi.ErrNotFound},
		{"check-version", spi.Op{Kind: spi.OpCheck, Path: p + "/existing", Version: 3}, spi.ErrVersionConflict},
	} {
		spitest.Run(t, tc.name, func(t spitest.T) {
			err := sm.Multi(ctx,
				spi.Op{Kind: spi.OpCreate, Path: p + "/fresh/deep/node", Data: []byte("no")},
				spi.Op{Kind: spi.OpSet, Path: p + "/existing", Data: []byte("changed"), Version: 0},
				spi.Op{Kind: spi.OpDelete, Path: p + "/victim", Version: spi.AnyVersion},
				tc.failing,
				spi.Op{Kind: spi.OpCreate, Path: p + "/after"},
			)
			wantErr(t, "multi with a failing op", err, tc.want)
			if !strings.Contains(err.Error(), tc.failing.Path) {
				t.Errorf("error %q does not name the failing op's path %s", err, tc.failing.Path)
			}
			wantAbsent(t, sm, p+"/fresh")
			wantAbsent(t, sm, p+"/after")
			wantNode(t, sm, p+"/existing", "keep", 0, false)
			wantNode(t, sm, p+"/victim/child", "keep", 0, false)
		})
	}
}

func testMultiRecursiveDelete(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	for _, q := range []string{"/t/x/y", "/t/x/z", "/t/w"} {
		must(t, sm.Create(ctx, p+q, nil, false))
	}
	must(t, sm.Multi(ctx,
		spi.Op{Kind: spi.OpDelete, Path: p + "/t", Version: 0},
		spi.Op{Kind: spi.OpCreate, Path: p + "/t", Data: []byte("fresh")},
	))
	wantNode(t, sm, p+"/t", "fresh", 0, false)
	kids, err := sm.Children(ctx, p+"/t")
	must(t, err)
	if len(kids) != 0 {
		t.Errorf("recreated node has children %v", kids)
	}
}

func testEphemeral(t spitest.T, s *suite, p string) {
	ctx := testContext(t)
	s1, s2 := s.open(t), s.open(t)
	must(t, s1.Create(ctx, p+"/parent/eph", []byte("mine"), true))
	wantNode(t, s2, p+"/parent/eph", "mine", 0, true)
	wantNode(t, s2, p+"/parent", "", 0, false)
	kids, err := s2.Children(ctx, p+"/parent")
	must(t, err)
	if strings.Join(kids, ",") != "eph" {
		t.Errorf("children = %v, want [eph]", kids)
	}
	// Set keeps the node ephemeral.
	v, err := s2.Set(ctx, p+"/parent/eph", []byte("set"), 0)
	must(t, err)
	wantNode(t, s1, p+"/parent/eph", "set", v, true)
	must(t, s1.Create(ctx, p+"/persistent", nil, false))

	must(t, s1.Close())
	eventually(t, "ephemeral node removed after its session closed", func() (bool, error) {
		_, err := s2.Get(ctx, p+"/parent/eph")
		if errors.Is(err, spi.ErrNotFound) {
			return true, nil
		}
		return false, err
	})
	// Parents created for an ephemeral node and persistent nodes stay.
	wantNode(t, s2, p+"/parent", "", 0, false)
	wantNode(t, s2, p+"/persistent", "", 0, false)
	kids, err = s2.Children(ctx, p+"/parent")
	must(t, err)
	if len(kids) != 0 {
		t.Errorf("children after the owner closed = %v", kids)
	}
	if err := s1.Close(); err != nil && !errors.Is(err, spi.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

func testEphemeralNoChildren(t spitest.T, s *suite, p string) {
	ctx := testContext(t)
	s1, s2 := s.open(t), s.open(t)
	must(t, s1.Create(ctx, p+"/eph", nil, true))
	for _, sm := range []spi.StateManager{s1, s2} {
		for _, ephemeral := range []bool{false, true} {
			if err := sm.Create(ctx, p+"/eph/child", nil, ephemeral); err == nil {
				t.Fatalf("created a child (ephemeral=%v) below an ephemeral node", ephemeral)
			}
			wantAbsent(t, s1, p+"/eph/child")
		}
	}
	err := s1.Multi(ctx, spi.Op{Kind: spi.OpCreate, Path: p + "/eph/child"})
	if err == nil {
		t.Fatal("multi created a child below an ephemeral node")
	}
	wantAbsent(t, s1, p+"/eph/child")
}

func testEphemeralTakeover(t spitest.T, s *suite, p string) {
	ctx := testContext(t)
	s1, s2 := s.open(t), s.open(t)
	loc := p + "/tmanager"
	must(t, s1.Create(ctx, loc, []byte("s1"), true))
	for i := 0; i < 3; i++ {
		wantErr(t, "second session creates a live ephemeral", s2.Create(ctx, loc, []byte("s2"), true), spi.ErrExists)
	}
	wantNode(t, s2, loc, "s1", 0, true)
	must(t, s1.Close())
	eventually(t, "second session takes the ephemeral after the first closed", func() (bool, error) {
		err := s2.Create(ctx, loc, []byte("s2"), true)
		if errors.Is(err, spi.ErrExists) {
			return false, nil
		}
		return err == nil, err
	})
	wantNode(t, s2, loc, "s2", 0, true)
	s3 := s.open(t)
	wantErr(t, "third session creates a live ephemeral", s3.Create(ctx, loc, nil, true), spi.ErrExists)
}

func testWatch(t spitest.T, s *suite, p string) {
	ctx := testContext(t)
	watcher, writer := s.open(t), s.open(t)
	n := p + "/node"
	events, err := watcher.Watch(ctx, n)
	must(t, err)
	must(t, writer.Create(ctx, n, []byte("1"), false))
	waitEvent(t, events, spi.EventCreated, n)
	_, err = writer.Set(ctx, n, []byte("2"), spi.AnyVersion)
	must(t, err)
	waitEvent(t, events, spi.EventDataChanged, n)
	must(t, writer.Create(ctx, n+"/child", nil, false))
	waitEvent(t, events, spi.EventChildrenChanged, n)
	// A grandchild is not a change of n's children.
	must(t, writer.Delete(ctx, n+"/child", spi.AnyVersion))
	waitEvent(t, events, spi.EventChildrenChanged, n)
	must(t, writer.Delete(ctx, n, spi.AnyVersion))
	waitEvent(t, events, spi.EventDeleted, n)
	// The watch goes on after a delete.
	must(t, writer.Create(ctx, n, nil, false))
	waitEvent(t, events, spi.EventCreated, n)
	// A session's own changes are reported too.
	_, err = watcher.Set(ctx, n, []byte("own"), spi.AnyVersion)
	must(t, err)
	waitEvent(t, events, spi.EventDataChanged, n)
}

func testWatchEphemeralClose(t spitest.T, s *suite, p string) {
	ctx := testContext(t)
	watcher, owner := s.open(t), s.open(t)
	n := p + "/eph"
	must(t, owner.Create(ctx, n, nil, true))
	events, err := watcher.Watch(ctx, n)
	must(t, err)
	parentEvents, err := watcher.Watch(ctx, p)
	must(t, err)
	must(t, owner.Close())
	waitEvent(t, events, spi.EventDeleted, n)
	waitEvent(t, parentEvents, spi.EventChildrenChanged, p)
}

func testWatchEnds(t spitest.T, s *suite, p string) {
	sm := s.open(t)
	ctx, cancel := context.WithCancel(testContext(t))
	events, err := sm.Watch(ctx, p)
	must(t, err)
	cancel()
	timer := time.NewTimer(eventWait)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-timer.C:
			t.Fatalf("watch channel not closed %v after its context ended", eventWait)
		}
	}
}

func testLock(t spitest.T, s *suite, p string) {
	ctx := testContext(t)
	s1, s2 := s.open(t), s.open(t)
	l := p + "/lock"
	unlock1, err := s1.Lock(ctx, l)
	must(t, err)

	short, cancel := context.WithTimeout(ctx, heldWait)
	_, err = s2.Lock(short, l)
	cancel()
	wantErr(t, "second session takes a held lock", err, spi.ErrLockHeld)

	var released atomic.Bool
	got := make(chan error, 1)
	var unlock2 func() error
	go func() {
		u, err := s2.Lock(ctx, l)
		if err == nil && !released.Load() {
			err = errors.New("second session got the lock before the first released it")
		}
		unlock2 = u
		got <- err
	}()
	// The waiting session must not get the lock while it is held.
	select {
	case err := <-got:
		t.Fatalf("second session's Lock returned while the lock was held: %v", err)
	case <-time.After(heldWait):
	}
	released.Store(true)
	must(t, unlock1())
	select {
	case err := <-got:
		must(t, err)
	case <-time.After(eventWait):
		t.Fatalf("second session did not get the lock within %v of its release", eventWait)
	}
	// Now the first session waits.
	short, cancel = context.WithTimeout(ctx, heldWait)
	_, err = s1.Lock(short, l)
	cancel()
	wantErr(t, "first session takes the lock held by the second", err, spi.ErrLockHeld)
	must(t, unlock2())
	unlock1, err = s1.Lock(ctx, l)
	must(t, err)
	must(t, unlock1())
}

func testLockClose(t spitest.T, s *suite, p string) {
	ctx := testContext(t)
	s1, s2 := s.open(t), s.open(t)
	l := p + "/lock"
	if _, err := s1.Lock(ctx, l); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := s2.Lock(ctx, l)
		if err == nil {
			err = u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("second session's Lock returned while the lock was held: %v", err)
	case <-time.After(heldWait):
	}
	must(t, s1.Close())
	select {
	case err := <-got:
		must(t, err)
	case <-time.After(eventWait):
		t.Fatalf("lock not released within %v of its owner's Close", eventWait)
	}
}

func testInvalidPaths(t spitest.T, s *suite, p string) {
	ctx, sm := testContext(t), s.open(t)
	bad := []string{
		"", "relative", "relative/x", p + "/", p + "//x", p + "/../x", p + "/./x", p + "/..",
		p + "/a b", p + "/a:b", p + "/a*", p + "/é", p + "/a\x00b", p + "/a\\b",
	}
	for _, path := range bad {
		calls := map[string]error{}
		_, calls["Get"] = sm.Get(ctx, path)
		_, calls["Children"] = sm.Children(ctx, path)
		calls["Create"] = sm.Create(ctx, path, nil, false)
		calls["CreateEphemeral"] = sm.Create(ctx, path, nil, true)
		_, calls["Set"] = sm.Set(ctx, path, nil, spi.AnyVersion)
		calls["Delete"] = sm.Delete(ctx, path, spi.AnyVersion)
		calls["Multi"] = sm.Multi(ctx, spi.Op{Kind: spi.OpCreate, Path: p + "/ok"}, spi.Op{Kind: spi.OpCreate, Path: path})
		wctx, cancel := context.WithCancel(ctx)
		_, calls["Watch"] = sm.Watch(wctx, path)
		lctx, lcancel := context.WithTimeout(ctx, heldWait)
		_, calls["Lock"] = sm.Lock(lctx, path)
		lcancel()
		cancel()
		for call, err := range calls {
			switch {
			case err == nil:
				t.Errorf("%s(%q) succeeded, want an invalid path error", call, path)
			case errors.Is(err, spi.ErrNotFound) || errors.Is(err, spi.ErrExists) || errors.Is(err, spi.ErrLockHeld):
				t.Errorf("%s(%q) = %v, want an invalid path error, not a state error", call, path, err)
			case path != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", path)) && !strings.Contains(err.Error(), path):
				t.Errorf("%s(%q) = %q, want the error to name the path", call, path, err)
			}
		}
		wantAbsent(t, sm, p+"/ok")
	}
}

func testConcurrentSets(t spitest.T, s *suite, p string) {
	ctx := testContext(t)
	sessions := []spi.StateManager{s.open(t), s.open(t)}
	must(t, sessions[0].Create(ctx, p, nil, false))
	const workers, each = 4, 25
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(sm spi.StateManager) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				v, err := sm.Set(ctx, p, []byte(strconv.Itoa(i)), spi.AnyVersion)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				dup := seen[v]
				seen[v] = true
				mu.Unlock()
				if dup {
					errs <- fmt.Errorf("two Sets returned version %d", v)
					return
				}
			}
		}(sessions[w%len(sessions)])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n, err := sessions[1].Get(ctx, p)
	must(t, err)
	if n.Version != workers*each {
		t.Fatalf("version after %d sets = %d", workers*each, n.Version)
	}
	for v := int64(1); v <= workers*each; v++ {
		if !seen[v] {
			t.Fatalf("no Set returned version %d", v)
		}
	}
}

func testConcurrentCAS(t spitest.T, s *suite, p string) {
	ctx := testContext(t)
	sessions := []spi.StateManager{s.open(t), s.open(t)}
	must(t, sessions[0].Create(ctx, p, []byte("0"), false))
	const workers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(sm spi.StateManager) {
			defer wg.Done()
			for i := 0; i < each; {
				n, err := sm.Get(ctx, p)
				if err != nil {
					errs <- err
					return
				}
				c, err := strconv.Atoi(string(n.Data))
				if err != nil {
					errs <- fmt.Errorf("counter %q: %w", n.Data, err)
					return
				}
				_, err = sm.Set(ctx, p, []byte(strconv.Itoa(c+1)), n.Version)
				if errors.Is(err, spi.ErrVersionConflict) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				i++
			}
		}(sessions[w%len(sessions)])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantNode(t, sessions[0], p, strconv.Itoa(workers*each), workers*each, false)
}

func testClosed(t spitest.T, s *suite, p string) {
	ctx := testContext(t)
	sm := s.open(t)
	must(t, sm.Close())
	_, err := sm.Get(ctx, p)
	wantErr(t, "get after Close", err, spi.ErrClosed)
	wantErr(t, "create after Close", sm.Create(ctx, p, nil, false), spi.ErrClosed)
	_, err = sm.Watch(ctx, p)
	wantErr(t, "watch after Close", err, spi.ErrClosed)
}
