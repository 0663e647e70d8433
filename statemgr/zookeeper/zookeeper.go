package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/statemgr/internal/nodepath"
	"github.com/egret-stream/egret/statemgr/internal/smops"
	"github.com/egret-stream/egret/statemgr/internal/watchstate"
)

// Config keys.
const (
	// KeyConnectionString lists the ZooKeeper servers, host:port[,host:port...].
	KeyConnectionString = "egret.statemgr.connection.string"
	// KeyRootPath is the ZooKeeper node under which Egret keeps its tree.
	KeyRootPath = "egret.statemgr.root.path"
	// KeySessionTimeout is the ZooKeeper session timeout (the server
	// clamps it to [2, 20] times its tickTime).
	KeySessionTimeout = "egret.statemgr.session.timeout"
	// KeyConnectTimeout bounds the wait for the first session.
	KeyConnectTimeout = "egret.statemgr.connection.timeout"
)

// Defaults.
const (
	DefaultRootPath       = "/egret"
	DefaultSessionTimeout = 10 * time.Second
	DefaultConnectTimeout = 15 * time.Second
)

func init() { spi.RegisterStateManager("zookeeper", New, configKeys...) }

// Options configures Open.
type Options struct {
	// Servers are the host:port addresses of the ensemble.
	Servers []string
	// Root is the absolute ZooKeeper path of Egret's "/" (DefaultRootPath
	// when empty). It is created when missing.
	Root string
	// SessionTimeout defaults to DefaultSessionTimeout.
	SessionTimeout time.Duration
	// Dialer opens the TCP connections (net.DialTimeout when nil); tests use
	// it to cut connections.
	Dialer zk.Dialer
	// Logger receives connection and session logs (none when nil).
	Logger *zap.Logger
}

// New is the spi.StateManagerFactory of the "zookeeper" backend. The first
// session must be established within egret.statemgr.connection.timeout.
func New(cfg spi.Config, log *zap.Logger) (spi.StateManager, error) {
	conn := strings.TrimSpace(cfg.String(KeyConnectionString, ""))
	if conn == "" {
		return nil, fmt.Errorf("zookeeper state manager: %s is not set (want host:port[,host:port...])", KeyConnectionString)
	}
	var servers []string
	for _, s := range strings.Split(conn, ",") {
		s = strings.TrimSpace(s)
		if strings.Contains(s, "/") {
			return nil, fmt.Errorf("zookeeper state manager: %s: %q: a chroot suffix is not supported, set %s instead", KeyConnectionString, s, KeyRootPath)
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, fmt.Errorf("zookeeper state manager: %s: %q is not host:port", KeyConnectionString, s)
		}
		servers = append(servers, s)
	}
	root := cfg.String(KeyRootPath, DefaultRootPath)
	if err := nodepath.Check(root); err != nil {
		return nil, fmt.Errorf("zookeeper state manager: %s: %w", KeyRootPath, err)
	}
	st, err := cfg.Duration(KeySessionTimeout, DefaultSessionTimeout)
	if err != nil {
		return nil, fmt.Errorf("zookeeper state manager: %w", err)
	}
	ct, err := cfg.Duration(KeyConnectTimeout, DefaultConnectTimeout)
	if err != nil {
		return nil, fmt.Errorf("zookeeper state manager: %w", err)
	}
	if st <= 0 || ct <= 0 {
		return nil, fmt.Errorf("zookeeper state manager: %s and %s must be positive", KeySessionTimeout, KeyConnectTimeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ct)
	defer cancel()
	sm, err := Open(ctx, Options{Servers: servers, Root: root, SessionTimeout: st, Logger: log})
	if err != nil {
		return nil, err
	}
	return sm, nil
}

// StateManager is a ZooKeeper session; it implements spi.StateManager.
type StateManager struct {
	conn    *zk.Conn
	root    string // "" when the root is "/"
	timeout time.Duration
	log     *zap.Logger
	acl     []zk.ACL
	done    chan struct{}

	closeOnce sync.Once

	// beforeCommit, when set (by tests), runs between planning a
	// transaction and sending it.
	beforeCommit func(attempt int)

	mu       sync.Mutex
	closed   bool
	gen      uint64        // increased on every session expiry
	lost     chan struct{} // closed and replaced on every session expiry
	session  chan struct{} // closed on the first session
	gotFirst bool
	lastDial error
}

var _ spi.StateManager = (*StateManager)(nil)

// Open connects to ZooKeeper and waits until a session is established or ctx
// ends; then it fails with an error naming the servers.
func Open(ctx context.Context, o Options) (*StateManager, error) {
	if len(o.Servers) == 0 {
		return nil, fmt.Errorf("zookeeper state manager: no servers (set %s)", KeyConnectionString)
	}
	if o.Root == "" {
		o.Root = DefaultRootPath
	}
	if err := nodepath.Check(o.Root); err != nil {
		return nil, fmt.Errorf("zookeeper state manager: root: %w", err)
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Dialer == nil {
		o.Dialer = net.DialTimeout
	}
	s := &StateManager{
		root:    strings.TrimSuffix(o.Root, "/"),
		timeout: o.SessionTimeout,
		log:     o.Logger.With(zap.String("statemgr", "zookeeper"), zap.Strings("servers", o.Servers)),
		acl:     zk.WorldACL(zk.PermAll),
		done:    make(chan struct{}),
		lost:    make(chan struct{}),
		session: make(chan struct{}),
	}
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := o.Dialer(network, addr, timeout)
		s.mu.Lock()
		s.lastDial = err
		s.mu.Unlock()
		return c, err
	}
	conn, _, err := zk.Connect(o.Servers, o.SessionTimeout,
		zk.WithLogger(zkLogger{s.log}), zk.WithLogInfo(false),
		zk.WithDialer(dial), zk.WithEventCallback(s.onEvent))
	if err != nil {
		return nil, fmt.Errorf("zookeeper state manager: connect to %s: %w", strings.Join(o.Servers, ","), err)
	}
	s.conn = conn
	select {
	case <-s.session:
	case <-ctx.Done():
		conn.Close()
		s.mu.Lock()
		last := s.lastDial
		s.mu.Unlock()
		why := ""
		if last != nil {
			why = fmt.Sprintf(" (last error: %v)", last)
		}
		return nil, fmt.Errorf("zookeeper state manager: no ZooKeeper session with %s%s: %w; check %s and that ZooKeeper is running",
			strings.Join(o.Servers, ","), why, ctx.Err(), KeyConnectionString)
	}
	if err := s.ensurePath(ctx, s.root); err != nil {
		s.Close()
		return nil, fmt.Errorf("zookeeper state manager: create root %s: %w", o.Root, err)
	}
	return s, nil
}

// zkLogger sends the library's log lines (only problems, as WithLogInfo is
// off) to zap.
type zkLogger struct{ l *zap.Logger }

func (z zkLogger) Printf(format string, args ...any) { z.l.Warn(fmt.Sprintf(format, args...)) }

func (s *StateManager) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		s.log.Info("zookeeper session established", zap.String("server", ev.Server))
		s.mu.Lock()
		if !s.gotFirst {
			s.gotFirst = true
			close(s.session)
		}
		s.mu.Unlock()
	case zk.StateExpired:
		s.log.Warn("zookeeper session expired: ephemeral nodes and locks of this session are gone", zap.String("server", ev.Server))
		s.mu.Lock()
		s.gen++
		close(s.lost)
		s.lost = make(chan struct{})
		s.mu.Unlock()
	case zk.StateDisconnected:
		s.log.Debug("zookeeper disconnected", zap.String("server", ev.Server))
	}
}

func (s *StateManager) full(p string) string {
	if p == nodepath.Root {
		if s.root == "" {
			return "/"
		}
		return s.root
	}
	return s.root + p
}

// ensurePath creates the absolute ZooKeeper path zpath and its parents as
// persistent empty nodes.
func (s *StateManager) ensurePath(ctx context.Context, zpath string) error {
	if zpath == "" || zpath == "/" {
		return nil
	}
	for _, p := range append(nodepath.Ancestors(zpath), zpath) {
		_, err := retry(ctx, s, func() (string, error) { return s.conn.Create(p, nil, 0, s.acl) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// do runs a ZooKeeper call, giving up (but not cancelling it) when ctx ends.
func do[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// transient reports a lost connection (or session) after which a call
// that is safe to repeat may be repeated.
func transient(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved)
}

// retry runs a call that is safe to repeat (a read, an idempotent delete),
// repeating it after connection losses until ctx ends or s is closed.
func retry[T any](ctx context.Context, s *StateManager, f func() (T, error)) (T, error) {
	backoff := 20 * time.Millisecond
	for {
		v, err := do(ctx, f)
		if !transient(err) || s.isClosed() {
			return v, err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return v, err
		case <-s.done:
			return v, err
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func (s *StateManager) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *StateManager) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("zookeeper state manager: %w", spi.ErrClosed)
	}
	return nil
}

// zkErr wraps an unexpected ZooKeeper error.
func (s *StateManager) zkErr(what string, err error) error {
	switch {
	case s.isClosed() || errors.Is(err, zk.ErrClosing):
		return fmt.Errorf("%s: %w", what, spi.ErrClosed)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", what, err)
	case transient(err):
		return fmt.Errorf("%s: connection to ZooKeeper lost; a write may or may not have been applied: %w", what, err)
	}
	return fmt.Errorf("%s: zookeeper: %w", what, err)
}

func version32(v int64) (int32, bool) {
	if v == spi.AnyVersion {
		return -1, true
	}
	if v < 0 || v > math.MaxInt32 {
		return 0, false
	}
	return int32(v), true
}

// Get implements spi.StateManager.
func (s *StateManager) Get(ctx context.Context, path string) (spi.Node, error) {
	if err := nodepath.Check(path); err != nil {
		return spi.Node{}, err
	}
	if err := s.checkOpen(); err != nil {
		return spi.Node{}, err
	}
	type res struct {
		data []byte
		stat *zk.Stat
	}
	r, err := retry(ctx, s, func() (res, error) {
		d, st, err := s.conn.Get(s.full(path))
		return res{d, st}, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return spi.Node{}, fmt.Errorf("get %s: %w", path, spi.ErrNotFound)
	case err != nil:
		return spi.Node{}, s.zkErr("get "+path, err)
	}
	return spi.Node{Data: r.data, Version: int64(r.stat.Version), Ephemeral: r.stat.EphemeralOwner != 0}, nil
}

// Children implements spi.StateManager.
func (s *StateManager) Children(ctx context.Context, path string) ([]string, error) {
	if err := nodepath.Check(path); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	kids, err := retry(ctx, s, func() ([]string, error) {
		k, _, err := s.conn.Children(s.full(path))
		return k, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, fmt.Errorf("children of %s: %w", path, spi.ErrNotFound)
	case err != nil:
		return nil, s.zkErr("children of "+path, err)
	}
	slices.Sort(kids)
	return kids, nil
}

// Create implements spi.StateManager.
func (s *StateManager) Create(ctx context.Context, path string, data []byte, ephemeral bool) error {
	if err := nodepath.Check(path); err != nil {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	flags := int32(0)
	if ephemeral {
		flags = zk.FlagEphemeral
	}
	// Fast path: the parent exists.
	_, err := do(ctx, func() (string, error) { return s.conn.Create(s.full(path), data, flags, s.acl) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNodeExists):
		return fmt.Errorf("create %s: %w", path, spi.ErrExists)
	case errors.Is(err, zk.ErrNoChildrenForEphemerals):
		return fmt.Errorf("create %s: parent %s is ephemeral: %w", path, nodepath.Parent(path), smops.ErrEphemeralParent)
	case !errors.Is(err, zk.ErrNoNode):
		return s.zkErr("create "+path, err)
	}
	// Parents are missing: create them and the node in one transaction.
	_, err = s.apply(ctx, []iop{{Op: spi.Op{Kind: spi.OpCreate, Path: path, Data: data}, ephemeral: ephemeral}})
	return err
}

// Set implements spi.StateManager.
func (s *StateManager) Set(ctx context.Context, path string, data []byte, version int64) (int64, error) {
	if err := smops.ValidateOne(spi.Op{Kind: spi.OpSet, Path: path, Version: version}); err != nil {
		return 0, err
	}
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	v32, ok := version32(version)
	if !ok {
		return 0, fmt.Errorf("set %s: version %d: %w", path, version, spi.ErrVersionConflict)
	}
	st, err := do(ctx, func() (*zk.Stat, error) { return s.conn.Set(s.full(path), data, v32) })
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return 0, fmt.Errorf("set %s: %w", path, spi.ErrNotFound)
	case errors.Is(err, zk.ErrBadVersion):
		return 0, fmt.Errorf("set %s: expected version %d: %w", path, version, spi.ErrVersionConflict)
	case err != nil:
		return 0, s.zkErr("set "+path, err)
	}
	return int64(st.Version), nil
}

// Delete implements spi.StateManager.
func (s *StateManager) Delete(ctx context.Context, path string, version int64) error {
	if err := smops.ValidateOne(spi.Op{Kind: spi.OpDelete, Path: path, Version: version}); err != nil {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	v32, ok := version32(version)
	if ok {
		// Fast path: a leaf.
		_, err := retry(ctx, s, func() (struct{}, error) { return struct{}{}, s.conn.Delete(s.full(path), v32) })
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrBadVersion):
			return fmt.Errorf("delete %s: expected version %d: %w", path, version, spi.ErrVersionConflict)
		case !errors.Is(err, zk.ErrNotEmpty):
			return s.zkErr("delete "+path, err)
		}
	}
	_, err := s.apply(ctx, []iop{{Op: spi.Op{Kind: spi.OpDelete, Path: path, Version: version}}})
	return err
}

// Multi implements spi.StateManager with one ZooKeeper multi: parents to
// create and subtrees to delete are expanded into explicit operations,
// and the transaction is planned again when the tree changed meanwhile.
func (s *StateManager) Multi(ctx context.Context, ops ...spi.Op) error {
	if err := smops.Validate(ops); err != nil {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	if len(ops) == 0 {
		return nil
	}
	in := make([]iop, len(ops))
	for i, op := range ops {
		in[i] = iop{Op: op}
	}
	_, err := s.apply(ctx, in)
	return err
}

// Watch implements spi.StateManager. ZooKeeper watches fire once; the
// watch re-arms them after every event and reports what changed since the
// last read (so changes between an event and the re-arm are not lost).
func (s *StateManager) Watch(ctx context.Context, path string) (<-chan spi.Event, error) {
	if err := nodepath.Check(path); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	w := &watch{s: s, path: path, full: s.full(path)}
	s.mu.Lock()
	w.gen = s.gen
	s.mu.Unlock()
	prev, err := w.arm(ctx)
	if err != nil {
		return nil, s.zkErr("watch "+path, err)
	}
	out := make(chan spi.Event, watchstate.Buffer)
	go w.run(ctx, prev, out)
	return out, nil
}

type watch struct {
	s       *StateManager
	path    string
	full    string
	gen     uint64
	existCh <-chan zk.Event
	childCh <-chan zk.Event
}

// arm reads the node and sets the watches that are not set.
func (w *watch) arm(ctx context.Context) (watchstate.State, error) {
	type res struct {
		ok   bool
		stat *zk.Stat
		ch   <-chan zk.Event
	}
	var r res
	var err error
	if w.existCh == nil {
		r, err = retry(ctx, w.s, func() (res, error) {
			ok, st, ch, err := w.s.conn.ExistsW(w.full)
			return res{ok, st, ch}, err
		})
		if err != nil {
			return watchstate.State{}, err
		}
		w.existCh = r.ch
	} else {
		r, err = retry(ctx, w.s, func() (res, error) {
			ok, st, err := w.s.conn.Exists(w.full)
			return res{ok, st, nil}, err
		})
		if err != nil {
			return watchstate.State{}, err
		}
	}
	if r.ok && w.childCh == nil {
		c, err := retry(ctx, w.s, func() (res, error) {
			_, st, ch, err := w.s.conn.ChildrenW(w.full)
			return res{true, st, ch}, err
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			// Deleted meanwhile; the exists watch fires.
			r.ok = false
		case err != nil:
			return watchstate.State{}, err
		default:
			r = c
			w.childCh = c.ch
		}
	}
	if !r.ok {
		return watchstate.State{}, nil
	}
	return watchstate.State{Exists: true, ID: r.stat.Czxid, Version: int64(r.stat.Version), Children: uint64(uint32(r.stat.Cversion))}, nil
}

func (w *watch) run(ctx context.Context, prev watchstate.State, out chan<- spi.Event) {
	defer close(out)
	send := func(e spi.Event) bool {
		select {
		case out <- e:
			return true
		case <-ctx.Done():
		case <-w.s.done:
		}
		return false
	}
	// ended reports whether a zk watch event means the connection is closed.
	ended := func(ev zk.Event) bool { return errors.Is(ev.Err, zk.ErrClosing) }
	retry := 50 * time.Millisecond
	for {
		w.s.mu.Lock()
		lost, gen := w.s.lost, w.s.gen
		w.s.mu.Unlock()
		if gen != w.gen {
			w.gen = gen
			if !send(spi.Event{Type: spi.EventSessionLost, Path: w.path}) {
				return
			}
		}
		var timer <-chan time.Time
		if w.existCh == nil {
			// The last re-arm failed (connection loss): try again soon.
			timer = time.After(retry)
			retry = min(retry*2, time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-w.s.done:
			return
		case <-lost:
			// All watches were dropped with the session; re-arm.
			w.existCh, w.childCh = nil, nil
			continue
		case ev, ok := <-w.existCh:
			w.existCh = nil
			if ok && ended(ev) {
				return
			}
		case ev, ok := <-w.childCh:
			w.childCh = nil
			if ok && ended(ev) {
				return
			}
		case <-timer:
		}
		cur, err := w.arm(ctx)
		if err != nil {
			if errors.Is(err, zk.ErrClosing) || ctx.Err() != nil || w.s.isClosed() {
				return
			}
			w.existCh = nil
			continue
		}
		retry = 50 * time.Millisecond
		for _, e := range watchstate.Diff(w.path, prev, cur) {
			if !send(e) {
				return
			}
		}
		prev = cur
	}
}

// Lock implements spi.StateManager with ZooKeeper's lock recipe: a
// persistent node at path whose ephemeral sequential children queue for
// the lock; the lowest holds it, each waiter watches its predecessor.
func (s *StateManager) Lock(ctx context.Context, path string) (func() error, error) {
	if err := nodepath.Check(path); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	dir := s.full(path)
	held := func(cause error) error {
		return fmt.Errorf("lock %s: %w (%v)", path, spi.ErrLockHeld, cause)
	}
	for {
		node, err := s.enqueue(ctx, dir)
		if err != nil {
			if ctx.Err() != nil {
				return nil, held(ctx.Err())
			}
			return nil, s.zkErr("lock "+path, err)
		}
		ok, err := s.awaitTurn(ctx, dir, node)
		if ok {
			var once sync.Once
			var uerr error
			return func() error {
				once.Do(func() {
					if err := s.conn.Delete(node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrClosing) {
						uerr = s.zkErr("unlock "+path, err)
					}
				})
				return uerr
			}, nil
		}
		// Give up our place in the queue.
		if derr := s.conn.Delete(node, -1); derr != nil && !errors.Is(derr, zk.ErrNoNode) {
			s.log.Warn("cannot remove lock request", zap.String("node", node), zap.Error(derr))
		}
		switch {
		case ctx.Err() != nil:
			return nil, held(ctx.Err())
		case errors.Is(err, errRequeue):
			continue
		default:
			return nil, s.zkErr("lock "+path, err)
		}
	}
}

// errRequeue: our queue entry vanished (session expiry); enqueue again.
var errRequeue = errors.New("lock request node vanished")

// enqueue creates this session's ephemeral sequential entry below dir.
func (s *StateManager) enqueue(ctx context.Context, dir string) (string, error) {
	for attempt := 0; ; attempt++ {
		node, err := do(ctx, func() (string, error) {
			return s.conn.CreateProtectedEphemeralSequential(dir+"/lock-", nil, s.acl)
		})
		if !errors.Is(err, zk.ErrNoNode) || attempt > 3 {
			return node, err
		}
		if err := s.ensurePath(ctx, dir); err != nil {
			return "", err
		}
	}
}

func lockSeq(name string) (int64, bool) {
	i := strings.LastIndex(name, "-")
	if i < 0 {
		return 0, false
	}
	var n int64
	for _, c := range name[i+1:] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, i+1 < len(name)
}

// awaitTurn waits until node is the lowest entry of dir.
func (s *StateManager) awaitTurn(ctx context.Context, dir, node string) (bool, error) {
	mine, ok := lockSeq(node)
	if !ok {
		return false, fmt.Errorf("unexpected lock node name %s", node)
	}
	for {
		kids, err := retry(ctx, s, func() ([]string, error) {
			k, _, err := s.conn.Children(dir)
			return k, err
		})
		if err != nil {
			return false, err
		}
		pred, predSeq, present := "", int64(-1), false
		for _, k := range kids {
			seq, ok := lockSeq(k)
			if !ok {
				continue
			}
			if dir+"/"+k == node {
				present = true
			}
			if seq < mine && seq > predSeq {
				pred, predSeq = k, seq
			}
		}
		if !present {
			return false, errRequeue
		}
		if pred == "" {
			return true, nil
		}
		type res struct {
			ok bool
			ch <-chan zk.Event
		}
		r, err := retry(ctx, s, func() (res, error) {
			ok, _, ch, err := s.conn.ExistsW(dir + "/" + pred)
			return res{ok, ch}, err
		})
		if err != nil {
			return false, err
		}
		if !r.ok {
			continue
		}
		select {
		case <-r.ch:
		case <-ctx.Done():
			return false, ctx.Err()
		case <-s.done:
			return false, spi.ErrClosed
		}
	}
}

// SessionTimeout implements spi.StateManager: the requested timeout (the
// server may clamp it).
func (s *StateManager) SessionTimeout() time.Duration { return s.timeout }

// SessionID is the current ZooKeeper session id (it changes after an
// expiry).
func (s *StateManager) SessionID() int64 { return s.conn.SessionID() }

// Close implements spi.StateManager: it closes the ZooKeeper session, which
// removes its ephemeral nodes and locks at once.
func (s *StateManager) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.done)
		s.conn.Close()
	})
	return nil
}
