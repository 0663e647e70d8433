package localfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/procinfo"
	"github.com/egret-stream/egret/statemgr/internal/nodepath"
	"github.com/egret-stream/egret/statemgr/internal/smops"
	"github.com/egret-stream/egret/statemgr/internal/watchstate"
)

// Config keys.
const (
	// KeyRootPath is the store's directory (required).
	KeyRootPath = "egret.statemgr.root.path"
	// KeySessionTimeout is how long after its last heartbeat a session
	// (and its ephemeral nodes and locks) is considered dead.
	KeySessionTimeout = "egret.statemgr.session.timeout"
	// KeyPollInterval is how often watches and lock waiters re-read the
	// store.
	KeyPollInterval = "egret.statemgr.localfs.poll.interval"
)

// Defaults.
const (
	DefaultSessionTimeout = 10 * time.Second
	DefaultPollInterval   = 200 * time.Millisecond
	// openTimeout bounds the wait for the store lock in Open and Close.
	openTimeout = 30 * time.Second
)

func init() { spi.RegisterStateManager("localfs", New, configKeys...) }

// Options configures Open.
type Options struct {
	// Root is the store's directory; created when missing.
	Root string
	// SessionTimeout defaults to DefaultSessionTimeout.
	SessionTimeout time.Duration
	// PollInterval defaults to DefaultPollInterval.
	PollInterval time.Duration
	// Logger (none when nil).
	Logger *zap.Logger
}

// New is the spi.StateManagerFactory of the "localfs" backend.
func New(cfg spi.Config, log *zap.Logger) (spi.StateManager, error) {
	root := cfg.String(KeyRootPath, "")
	if root == "" {
		return nil, fmt.Errorf("localfs state manager: %s is not set (want a directory, for example ~/.egret/state/local)", KeyRootPath)
	}
	timeout, err := cfg.Duration(KeySessionTimeout, DefaultSessionTimeout)
	if err != nil {
		return nil, fmt.Errorf("localfs state manager: %w", err)
	}
	poll, err := cfg.Duration(KeyPollInterval, DefaultPollInterval)
	if err != nil {
		return nil, fmt.Errorf("localfs state manager: %w", err)
	}
	if timeout <= 0 || poll <= 0 {
		return nil, fmt.Errorf("localfs state manager: %s and %s must be positive", KeySessionTimeout, KeyPollInterval)
	}
	return Open(Options{Root: root, SessionTimeout: timeout, PollInterval: poll, Logger: log})
}

// StateManager is a session on a directory store; it implements
// spi.StateManager.
type StateManager struct {
	root    string
	timeout time.Duration
	poll    time.Duration
	log     *zap.Logger
	host    string
	pid     int
	pstart  string
	done    chan struct{}
	hbStop  chan struct{}
	hbDone  chan struct{}

	mu         sync.Mutex
	sid        string
	gen        uint64
	closed     bool
	ephemerals map[string]struct{} // paths this session created ephemeral
	local      chan struct{}       // closed and replaced after each change made here

	// Test hooks: run after each mutation step of a transaction, and
	// after a transaction committed.
	afterStep   func()
	afterCommit func()
}

var _ spi.StateManager = (*StateManager)(nil)

// Open opens a new session on the store in o.Root.
func Open(o Options) (*StateManager, error) {
	if o.Root == "" {
		return nil, fmt.Errorf("localfs state manager: no root directory (set %s)", KeyRootPath)
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, fmt.Errorf("localfs state manager: root %q: %w", o.Root, err)
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	for _, d := range []string{root, filepath.Join(root, treeDir), filepath.Join(root, sessionsDir), filepath.Join(root, trashDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("localfs state manager: %s %q: %w", KeyRootPath, o.Root, err)
		}
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("localfs state manager: hostname: %w", err)
	}
	m := &StateManager{
		root:       root,
		timeout:    o.SessionTimeout,
		poll:       o.PollInterval,
		log:        o.Logger.With(zap.String("statemgr", "localfs"), zap.String("root", root)),
		host:       host,
		pid:        os.Getpid(),
		done:       make(chan struct{}),
		hbStop:     make(chan struct{}),
		hbDone:     make(chan struct{}),
		ephemerals: map[string]struct{}{},
		local:      make(chan struct{}),
	}
	m.pstart, _ = procinfo.Start(m.pid)
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	err = m.run(ctx, func(t *tx) error {
		m.cleanTrash()
		tree := filepath.Join(root, treeDir)
		n, err := readNode(tree)
		if errors.Is(err, spi.ErrCorrupt) {
			// The root holds no data: rewrite it rather than refuse to open.
			m.log.Warn("rewriting the corrupt root node", zap.Error(err))
			n, err = nil, nil
		}
		if err != nil {
			return err
		} else if n == nil {
			if err := writeNode(tree, &fnode{header: header{ID: 1}}); err != nil {
				return err
			}
		}
		// Forget sessions that died without anyone noticing.
		ents, _ := os.ReadDir(filepath.Join(root, sessionsDir))
		for _, e := range ents {
			if validSID(e.Name()) {
				t.isAlive(e.Name())
			}
		}
		sid := randomHex(8)
		if err := m.writeSessionLocked(sid); err != nil {
			return err
		}
		m.mu.Lock()
		m.sid = sid
		m.mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("localfs state manager: open %s: %w", root, err)
	}
	go m.heartbeat()
	m.log.Debug("session opened", zap.String("session", m.sid))
	return m, nil
}

func (m *StateManager) notifyLocal() {
	m.mu.Lock()
	close(m.local)
	m.local = make(chan struct{})
	m.mu.Unlock()
}

func (m *StateManager) checkOpen() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("localfs state manager: %w", spi.ErrClosed)
	}
	return nil
}

// Get implements spi.StateManager.
func (m *StateManager) Get(ctx context.Context, path string) (spi.Node, error) {
	if err := nodepath.Check(path); err != nil {
		return spi.Node{}, err
	}
	if err := m.checkOpen(); err != nil {
		return spi.Node{}, err
	}
	var n *fnode
	err := m.run(ctx, func(t *tx) (err error) {
		n, err = t.get(path)
		return err
	})
	if err != nil {
		return spi.Node{}, fmt.Errorf("get %s: %w", path, err)
	}
	if n == nil {
		return spi.Node{}, fmt.Errorf("get %s: %w", path, spi.ErrNotFound)
	}
	if n.data == nil {
		n.data = []byte{}
	}
	return spi.Node{Data: n.data, Version: n.Version, Ephemeral: n.Owner != ""}, nil
}

// Children implements spi.StateManager.
func (m *StateManager) Children(ctx context.Context, path string) ([]string, error) {
	if err := nodepath.Check(path); err != nil {
		return nil, err
	}
	if err := m.checkOpen(); err != nil {
		return nil, err
	}
	var names []string
	found := false
	err := m.run(ctx, func(t *tx) error {
		n, err := t.get(path)
		if errors.Is(err, spi.ErrCorrupt) {
			n, err = &fnode{}, nil // its children are still there
		}
		if err != nil || n == nil {
			return err
		}
		found = true
		names, _, err = t.children(path)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", path, err)
	}
	if !found {
		return nil, fmt.Errorf("children of %s: %w", path, spi.ErrNotFound)
	}
	if names == nil {
		names = []string{}
	}
	return names, nil
}

// Create implements spi.StateManager.
func (m *StateManager) Create(ctx context.Context, path string, data []byte, ephemeral bool) error {
	if err := nodepath.Check(path); err != nil {
		return err
	}
	if err := m.checkOpen(); err != nil {
		return err
	}
	var owner string
	err := m.run(ctx, func(t *tx) error {
		owner = t.sid
		return t.create(path, slices.Clone(data), ephemeral)
	})
	if err == nil && ephemeral {
		m.mu.Lock()
		if m.sid == owner {
			m.ephemerals[path] = struct{}{}
		}
		m.mu.Unlock()
	}
	return err
}

// Set implements spi.StateManager.
func (m *StateManager) Set(ctx context.Context, path string, data []byte, version int64) (int64, error) {
	if err := smops.ValidateOne(spi.Op{Kind: spi.OpSet, Path: path, Version: version}); err != nil {
		return 0, err
	}
	if err := m.checkOpen(); err != nil {
		return 0, err
	}
	var v int64
	err := m.run(ctx, func(t *tx) (err error) {
		v, err = t.set(path, slices.Clone(data), version)
		return err
	})
	return v, err
}

// Delete implements spi.StateManager.
func (m *StateManager) Delete(ctx context.Context, path string, version int64) error {
	if err := smops.ValidateOne(spi.Op{Kind: spi.OpDelete, Path: path, Version: version}); err != nil {
		return err
	}
	if err := m.checkOpen(); err != nil {
		return err
	}
	return m.run(ctx, func(t *tx) error { return t.delete(path, version) })
}

// Multi implements spi.StateManager: under the store lock, the ops are
// applied one by one with an undo journal; the first failing op rolls
// everything back.
func (m *StateManager) Multi(ctx context.Context, ops ...spi.Op) error {
	if err := smops.Validate(ops); err != nil {
		return err
	}
	if err := m.checkOpen(); err != nil {
		return err
	}
	if len(ops) == 0 {
		return nil
	}
	return m.run(ctx, func(t *tx) error {
		for i, op := range ops {
			var err error
			switch op.Kind {
			case spi.OpCreate:
				err = t.create(op.Path, slices.Clone(op.Data), false)
			case spi.OpSet:
				_, err = t.set(op.Path, slices.Clone(op.Data), op.Version)
			case spi.OpDelete:
				err = t.delete(op.Path, op.Version)
			case spi.OpCheck:
				err = t.check(op.Path, op.Version)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", smops.Label(i, op), err)
			}
		}
		return nil
	})
}

// wake returns a channel closed after the poll interval or at the next
// change made by this session, whichever comes first.
func (m *StateManager) wake() <-chan struct{} {
	m.mu.Lock()
	local := m.local
	m.mu.Unlock()
	ch := make(chan struct{})
	go func() {
		t := time.NewTimer(m.poll)
		defer t.Stop()
		select {
		case <-t.C:
		case <-local:
		case <-m.done:
		}
		close(ch)
	}()
	return ch
}

// Watch implements spi.StateManager by polling the node every poll
// interval (and after each change made by this session).
func (m *StateManager) Watch(ctx context.Context, path string) (<-chan spi.Event, error) {
	if err := nodepath.Check(path); err != nil {
		return nil, err
	}
	if err := m.checkOpen(); err != nil {
		return nil, err
	}
	return watchstate.Start(ctx, path, watchstate.Source{
		Read: func(ctx context.Context) (st watchstate.State, err error) {
			err = m.run(ctx, func(t *tx) (err error) {
				st, err = t.state(path)
				return err
			})
			return st, err
		},
		Wake: m.wake,
		SessionGen: func() uint64 {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.gen
		},
		Done: m.done,
	})
}

// Lock implements spi.StateManager. The lock is an ephemeral node at path
// (so a path used as a lock must not hold data); waiters poll for it.
func (m *StateManager) Lock(ctx context.Context, path string) (func() error, error) {
	if err := nodepath.Check(path); err != nil {
		return nil, err
	}
	for {
		wake := m.wake()
		err := m.Create(ctx, path, nil, true)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("lock %s: %w (%v)", path, spi.ErrLockHeld, ctx.Err())
		}
		if !errors.Is(err, spi.ErrExists) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, fmt.Errorf("lock %s: %w (%v)", path, spi.ErrLockHeld, ctx.Err())
		case <-m.done:
			return nil, fmt.Errorf("lock %s: %w", path, spi.ErrClosed)
		}
	}
	m.mu.Lock()
	owner := m.sid
	m.mu.Unlock()
	var once sync.Once
	var uerr error
	return func() error {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
			defer cancel()
			uerr = m.run(ctx, func(t *tx) error {
				n, err := t.get(path)
				if err != nil || n == nil || n.Owner != owner {
					return err
				}
				return t.removeDir(path)
			})
			m.mu.Lock()
			delete(m.ephemerals, path)
			m.mu.Unlock()
			if uerr != nil {
				uerr = fmt.Errorf("unlock %s: %w", path, uerr)
			}
		})
		return uerr
	}, nil
}

// SessionTimeout implements spi.StateManager.
func (m *StateManager) SessionTimeout() time.Duration { return m.timeout }

// Close implements spi.StateManager: it ends the session's lease (so its
// ephemeral nodes and locks are gone for every reader at once) and removes
// those it knows of.
func (m *StateManager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	sid := m.sid
	paths := make([]string, 0, len(m.ephemerals))
	for p := range m.ephemerals {
		paths = append(paths, p)
	}
	m.mu.Unlock()
	close(m.hbStop)
	<-m.hbDone
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	err := m.run(ctx, func(t *tx) error {
		if err := os.Remove(m.sessionFile(sid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		t.alive[sid] = false
		for _, p := range paths {
			if _, err := t.get(p); err != nil {
				return err
			}
		}
		return nil
	})
	close(m.done)
	if err != nil {
		return fmt.Errorf("localfs state manager: close: %w", err)
	}
	return nil
}

// abandon ends the session the way a crashed process would: the
// heartbeat stops, nothing is cleaned up. For tests.
func (m *StateManager) abandon() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	m.mu.Unlock()
	close(m.hbStop)
	<-m.hbDone
	close(m.done)
}
