package localfs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/statemgr/statemgrtest"
)

// The test binary doubles as the child process of the cross-process tests.
const helperEnv = "EGRET_LOCALFS_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

// helper runs in a child process: it opens the store in $ROOT and does
// what mode says.
func helper(mode string) int {
	timeout, _ := time.ParseDuration(os.Getenv("TIMEOUT"))
	m, err := Open(Options{Root: os.Getenv("ROOT"), SessionTimeout: timeout, PollInterval: 20 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch mode {
	case "ephemeral":
		// Create an ephemeral node and a lock, then wait to be killed.
		if err := m.Create(ctx, "/tmanagers/wc", []byte(strconv.Itoa(os.Getpid())), true); err != nil {
			return fail(err)
		}
		if _, err := m.Lock(ctx, "/locks/wc"); err != nil {
			return fail(err)
		}
		fmt.Println("ready")
		select {}
	case "cas":
		n, _ := strconv.Atoi(os.Getenv("N"))
		for i := 0; i < n; {
			node, err := m.Get(ctx, "/counter")
			if err != nil {
				return fail(err)
			}
			c, _ := strconv.Atoi(string(node.Data))
			_, err = m.Set(ctx, "/counter", []byte(strconv.Itoa(c+1)), node.Version)
			if errors.Is(err, spi.ErrVersionConflict) {
				continue
			}
			if err != nil {
				return fail(err)
			}
			i++
		}
		return 0
	case "crash-step", "crash-commit":
		// Die (SIGKILL) in the middle of a Multi, or right after its commit.
		steps, _ := strconv.Atoi(os.Getenv("STEPS"))
		die := func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL); select {} }
		if mode == "crash-step" {
			n := 0
			m.afterStep = func() {
				if n++; n == steps {
					die()
				}
			}
		} else {
			m.afterCommit = die
		}
		err := m.Multi(ctx, crashOps...)
		return fail(fmt.Errorf("multi returned %v instead of dying", err))
	}
	return fail(fmt.Errorf("unknown helper mode %q", mode))
}

// crashOps is the transaction the crash tests interrupt: it touches every
// kind of step (delete a subtree, set, create with parents, delete+create).
var crashOps = []spi.Op{
	{Kind: spi.OpDelete, Path: "/topologies/old", Version: spi.AnyVersion},
	{Kind: spi.OpSet, Path: "/topologies/wc", Data: []byte("new"), Version: 0},
	{Kind: spi.OpCreate, Path: "/packingplans/wc/deep", Data: []byte("plan")},
	{Kind: spi.OpDelete, Path: "/executionstate", Version: spi.AnyVersion},
	{Kind: spi.OpCreate, Path: "/executionstate/wc", Data: []byte("state")},
}

func startHelper(t *testing.T, mode, root string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode, "ROOT=" + root}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

func open(t *testing.T, root string, timeout time.Duration) *StateManager {
	t.Helper()
	m, err := Open(Options{Root: root, SessionTimeout: timeout, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
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
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConformance(t *testing.T) {
	root := t.TempDir()
	statemgrtest.Run(t, func(t *testing.T) spi.StateManager { return open(t, root, 5*time.Second) })
}

func TestExpiry(t *testing.T) {
	root := t.TempDir()
	statemgrtest.RunExpiry(t,
		func(t *testing.T) spi.StateManager { return open(t, root, time.Second) },
		func(_ *testing.T, sm spi.StateManager) { sm.(*StateManager).abandon() })
}

// TestCrossProcessEphemeral runs the owner of an ephemeral node and a lock
// in another process and kills it. With SIGKILL the node goes as soon as a
// reader sees the process gone: the child's session timeout is a minute,
// far beyond the test's wait, so only the process check can pass the test
// (the killed child stays a zombie, unreaped, meanwhile). With SIGSTOP the
// process lives but stops its heartbeat: the node goes when its one-second
// lease runs out.
func TestCrossProcessEphemeral(t *testing.T) {
	for _, tc := range []struct {
		sig     syscall.Signal
		timeout time.Duration
	}{{syscall.SIGKILL, time.Minute}, {syscall.SIGSTOP, time.Second}} {
		sig, timeout := tc.sig, tc.timeout
		t.Run(sig.String(), func(t *testing.T) {
			root := t.TempDir()
			ctx := ctxFor(t)
			cmd := startHelper(t, "ephemeral", root, "TIMEOUT="+timeout.String())
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || line != "ready\n" {
				t.Fatalf("child said %q, %v", line, err)
			}
			m := open(t, root, timeout)
			n, err := m.Get(ctx, "/tmanagers/wc")
			if err != nil || !n.Ephemeral || string(n.Data) != strconv.Itoa(cmd.Process.Pid) {
				t.Fatalf("child's ephemeral node: %+v, %v", n, err)
			}
			if err := m.Create(ctx, "/tmanagers/wc", nil, true); !errors.Is(err, spi.ErrExists) {
				t.Fatalf("took the live child's ephemeral node: %v", err)
			}
			short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			_, err = m.Lock(short, "/locks/wc")
			cancel()
			if !errors.Is(err, spi.ErrLockHeld) {
				t.Fatalf("took the live child's lock: %v", err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			waitFor(t, "child's ephemeral node vanishes", 10*time.Second, func() bool {
				_, err := m.Get(ctx, "/tmanagers/wc")
				return errors.Is(err, spi.ErrNotFound)
			})
			t.Logf("ephemeral node gone %v after %v (session timeout %v)", time.Since(killed).Round(time.Millisecond), sig, timeout)
			if _, err := m.Lock(ctx, "/locks/wc"); err != nil {
				t.Fatal(err)
			}
			if err := m.Create(ctx, "/tmanagers/wc", []byte("me"), true); err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(filepath.Join(root, sessionsDir))
			if len(ents) != 1 {
				t.Errorf("session leases left: %d, want only ours", len(ents))
			}
		})
	}
}

// TestCrossProcessCompareAndSet has two processes and this one increment
// a counter with conditional Sets: none may be lost.
func TestCrossProcessCompareAndSet(t *testing.T) {
	root := t.TempDir()
	ctx := ctxFor(t)
	m := open(t, root, 5*time.Second)
	if err := m.Create(ctx, "/counter", []byte("0"), false); err != nil {
		t.Fatal(err)
	}
	const perProcess = 40
	var cmds []*exec.Cmd
	for i := 0; i < 2; i++ {
		cmd := startHelper(t, "cas", root, "TIMEOUT=5s", "N="+strconv.Itoa(perProcess))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i := 0; i < perProcess; {
		n, err := m.Get(ctx, "/counter")
		if err != nil {
			t.Fatal(err)
		}
		c, _ := strconv.Atoi(string(n.Data))
		if _, err := m.Set(ctx, "/counter", []byte(strconv.Itoa(c+1)), n.Version); err == nil {
			i++
		} else if !errors.Is(err, spi.ErrVersionConflict) {
			t.Fatal(err)
		}
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	n, err := m.Get(ctx, "/counter")
	if err != nil {
		t.Fatal(err)
	}
	if string(n.Data) != strconv.Itoa(3*perProcess) || n.Version != 3*perProcess {
		t.Fatalf("counter = %q version %d, want %d", n.Data, n.Version, 3*perProcess)
	}
}

// dump lists every node of the store as path=data.
func dump(t *testing.T, m *StateManager) string {
	t.Helper()
	ctx := ctxFor(t)
	var out []string
	var walk func(p string)
	walk = func(p string) {
		n, err := m.Get(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s=%s@%d", p, n.Data, n.Version))
		kids, err := m.Children(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			if p == "/" {
				walk("/" + k)
			} else {
				walk(p + "/" + k)
			}
		}
	}
	walk("/")
	return strings.Join(out, " ")
}

func seedCrashTree(t *testing.T, m *StateManager) {
	t.Helper()
	ctx := ctxFor(t)
	for _, p := range []string{"/topologies/old/a", "/topologies/old/b/c", "/topologies/wc", "/executionstate/x"} {
		if err := m.Create(ctx, p, []byte("seed"), false); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCrashMidMulti kills a process (SIGKILL) after each mutation step of
// a Multi: the next user of the store must find the tree exactly as before
// the Multi. Killed right after the commit, it must find all of it.
func TestCrashMidMulti(t *testing.T) {
	// Count the steps of the transaction on a scratch store.
	scratch := open(t, t.TempDir(), 5*time.Second)
	seedCrashTree(t, scratch)
	before := dump(t, scratch)
	steps := 0
	scratch.afterStep = func() { steps++ }
	if err := scratch.Multi(ctxFor(t), crashOps...); err != nil {
		t.Fatal(err)
	}
	scratch.afterStep = nil
	after := dump(t, scratch)
	if steps < 5 {
		t.Fatalf("transaction has %d steps, want at least 5", steps)
	}

	run := func(t *testing.T, mode string, k int, want string) {
		root := t.TempDir()
		m := open(t, root, 5*time.Second)
		seedCrashTree(t, m)
		cmd := startHelper(t, mode, root, "TIMEOUT=5s", "STEPS="+strconv.Itoa(k))
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("child did not die by SIGKILL: %v", err)
		}
		if mode == "crash-step" {
			if _, err := os.Stat(filepath.Join(root, txnDir)); err != nil {
				t.Fatalf("no journal left by the crashed transaction: %v", err)
			}
		}
		if got := dump(t, m); got != want {
			t.Fatalf("after a crash:\n got %s\nwant %s", got, want)
		}
		if _, err := os.Stat(filepath.Join(root, txnDir)); !os.IsNotExist(err) {
			t.Fatalf("journal still present after recovery: %v", err)
		}
		// The store works normally afterwards.
		if err := m.Multi(ctxFor(t), crashOps...); err != nil {
			t.Fatal(err)
		}
		if got := dump(t, m); got != after {
			t.Fatalf("after recovery and a retry:\n got %s\nwant %s", got, after)
		}
	}
	for k := 1; k <= steps; k++ {
		t.Run("step"+strconv.Itoa(k), func(t *testing.T) { run(t, "crash-step", k, before) })
	}
	t.Run("after-commit", func(t *testing.T) {
		root := t.TempDir()
		m := open(t, root, 5*time.Second)
		seedCrashTree(t, m)
		err := startHelper(t, "crash-commit", root, "TIMEOUT=5s").Run()
		if err == nil {
			t.Fatal("child survived")
		}
		if got := dump(t, m); got != after {
			t.Fatalf("after a crash past commit:\n got %s\nwant %s", got, after)
		}
	})
}

// TestRollbackInterruptedTwice: a crash after a rollback reversed every
// record but before it removed the journal. The next lock holder must not
// reverse the records again (reversing "remove the new /a" again would
// delete the restored original /a).
func TestRollbackInterruptedTwice(t *testing.T) {
	root := t.TempDir()
	m := open(t, root, 5*time.Second)
	ctx := ctxFor(t)
	if err := m.Create(ctx, "/a/child", []byte("orig"), false); err != nil {
		t.Fatal(err)
	}
	before := dump(t, m)
	// Delete /a, create /a/new, and "crash" (panic out of the transaction,
	// which releases the lock but leaves the journal) after the last step.
	crash := errors.New("crash")
	steps := 0
	m.afterStep = func() {
		if steps++; steps == 3 {
			panic(crash)
		}
	}
	func() {
		defer func() {
			if r := recover(); r != crash {
				t.Fatalf("recovered %v", r)
			}
		}()
		_ = m.Multi(ctx,
			spi.Op{Kind: spi.OpDelete, Path: "/a", Version: spi.AnyVersion},
			spi.Op{Kind: spi.OpCreate, Path: "/a/new", Data: []byte("x")},
		)
	}()
	m.afterStep = nil
	dir := filepath.Join(root, txnDir)
	journal, err := os.ReadFile(filepath.Join(dir, journalLog))
	if err != nil {
		t.Fatal(err)
	}
	records := strings.Count(string(journal), "\n")
	if records != 2 {
		t.Fatalf("journal has %d records, want 2 (restore /a, remove /a):\n%s", records, journal)
	}
	// Roll back completely, then put the journal back as the crash before
	// its removal would have left it: both records marked undone.
	log, err := os.OpenFile(filepath.Join(dir, journalLog), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	var undos []undo
	for _, line := range strings.Split(strings.TrimSpace(string(journal)), "\n") {
		var u undo
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			t.Fatal(err)
		}
		undos = append(undos, u)
	}
	if err := rollbackDir(root, dir, undos, log); err != nil {
		t.Fatal(err)
	}
	log.Close()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	leftover := string(journal) + `{"op":"undone","index":1}` + "\n" + `{"op":"undone"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, journalLog), []byte(leftover), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, m); got != before {
		t.Fatalf("after recovering an interrupted rollback:\n got %s\nwant %s", got, before)
	}
}

// TestSessionLostAfterPause declares a live session dead (as another
// process would after a pause longer than the timeout): the session
// reports EventSessionLost and goes on as a new session.
func TestSessionLostAfterPause(t *testing.T) {
	root := t.TempDir()
	ctx := ctxFor(t)
	a := open(t, root, 3*time.Second)
	b := open(t, root, 3*time.Second)
	if err := a.Create(ctx, "/eph", nil, true); err != nil {
		t.Fatal(err)
	}
	events, err := a.Watch(ctx, "/eph")
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	lease := a.sessionFile(a.sid)
	a.mu.Unlock()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(lease, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "/eph"); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("ephemeral node of a silent session: %v", err)
	}
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	var got []spi.EventType
	for lost := false; !lost; {
		select {
		case e := <-events:
			got = append(got, e.Type)
			lost = e.Type == spi.EventSessionLost
		case <-timer.C:
			t.Fatalf("no EventSessionLost (events %v)", got)
		}
	}
	if err := a.Create(ctx, "/eph", []byte("again"), true); err != nil {
		t.Fatal(err)
	}
	n, err := b.Get(ctx, "/eph")
	if err != nil || string(n.Data) != "again" {
		t.Fatalf("recreated node: %+v, %v", n, err)
	}
}

func TestFactoryConfig(t *testing.T) {
	f, err := spi.LookupStateManager("localfs")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  spi.Config
		want string
	}{
		{"no root", spi.Config{}, KeyRootPath + " is not set"},
		{"bad timeout", spi.Config{KeyRootPath: t.TempDir(), KeySessionTimeout: "soon"}, KeySessionTimeout},
		{"negative poll", spi.Config{KeyRootPath: t.TempDir(), KeyPollInterval: "-1s"}, "must be positive"},
		{"root is a file", spi.Config{KeyRootPath: "/dev/null"}, KeyRootPath},
	} {
		_, err := f(tc.cfg, zap.NewNop())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	root := t.TempDir()
	sm, err := f(spi.Config{KeyRootPath: root, KeySessionTimeout: "2s"}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	if sm.SessionTimeout() != 2*time.Second {
		t.Errorf("SessionTimeout = %v", sm.SessionTimeout())
	}
	if err := sm.Create(ctxFor(t), "/topologies/wc", []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, treeDir, "topologies", "wc", nodeFile))
	if err != nil || !strings.HasSuffix(string(b), "\nx") {
		t.Fatalf("node file: %q, %v", b, err)
	}
}

// TestCorruptNodeFile damages a node file in the ways a crash, a full disk
// or a careless operator do, and checks that the node is reported as
// corrupt (naming the file), still listed, and removed by an
// unconditional delete, while its siblings stay readable.
func TestCorruptNodeFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		want   string
	}{
		{"empty", func([]byte) []byte { return nil }, "no header line"},
		{"truncated header", func(b []byte) []byte { return b[:5] }, "no header line"},
		{"truncated data", func(b []byte) []byte { return b[:len(b)-3] }, "truncated"},
		{"garbage header", func(b []byte) []byte { return append([]byte("\x00\xffgarbage\n"), b...) }, "unreadable header"},
		{"data overwritten", func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }, "checksum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			sm := open(t, root, 5*time.Second)
			ctx := ctxFor(t)
			for _, p := range []string{"/plans/bad", "/plans/good"} {
				if err := sm.Create(ctx, p, []byte("node data"), false); err != nil {
					t.Fatal(err)
				}
			}
			file := filepath.Join(root, treeDir, "plans", "bad", nodeFile)
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, tc.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = sm.Get(ctx, "/plans/bad")
			if !errors.Is(err, spi.ErrCorrupt) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Get of the damaged node: %v, want spi.ErrCorrupt naming %s and saying %q", err, file, tc.want)
			}
			if n, err := sm.Get(ctx, "/plans/good"); err != nil || string(n.Data) != "node data" {
				t.Errorf("Get of its sibling: %q, %v", n.Data, err)
			}
			if kids, err := sm.Children(ctx, "/plans"); err != nil || strings.Join(kids, ",") != "bad,good" {
				t.Errorf("Children = %v, %v; want bad and good", kids, err)
			}
			if err := sm.Delete(ctx, "/plans/bad", 3); !errors.Is(err, spi.ErrCorrupt) {
				t.Errorf("conditional Delete of the damaged node: %v, want spi.ErrCorrupt", err)
			}
			if err := sm.Multi(ctx, spi.Op{Kind: spi.OpDelete, Path: "/plans/bad", Version: spi.AnyVersion}); err != nil {
				t.Fatalf("unconditional delete of the damaged node: %v", err)
			}
			if _, err := sm.Get(ctx, "/plans/bad"); !errors.Is(err, spi.ErrNotFound) {
				t.Errorf("Get after the delete: %v, want spi.ErrNotFound", err)
			}
			if err := sm.Create(ctx, "/plans/bad", []byte("again"), false); err != nil {
				t.Errorf("Create after the delete: %v", err)
			}
		})
	}
}

// TestCorruptParentNode: a directory node (no data of its own) with a
// damaged file keeps its children listable and creatable, and a damaged
// root node is rewritten at open.
func TestCorruptParentNode(t *testing.T) {
	root := t.TempDir()
	sm := open(t, root, 5*time.Second)
	ctx := ctxFor(t)
	if err := sm.Create(ctx, "/topologies/a", []byte("a"), false); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(root, treeDir, "topologies", nodeFile), filepath.Join(root, treeDir, nodeFile)} {
		if err := os.WriteFile(f, []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if kids, err := sm.Children(ctx, "/topologies"); err != nil || strings.Join(kids, ",") != "a" {
		t.Errorf("Children below a damaged parent = %v, %v; want [a]", kids, err)
	}
	if err := sm.Create(ctx, "/topologies/b", []byte("b"), false); err != nil {
		t.Errorf("Create below a damaged parent: %v", err)
	}
	again := open(t, root, 5*time.Second)
	if n, err := again.Get(ctx, "/topologies/a"); err != nil || string(n.Data) != "a" {
		t.Errorf("a session opened on a damaged root: Get = %q, %v", n.Data, err)
	}
}
