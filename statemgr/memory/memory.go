package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/statemgr/internal/nodepath"
	"github.com/egret-stream/egret/statemgr/internal/smops"
	"github.com/egret-stream/egret/statemgr/internal/watchstate"
	"go.uber.org/zap"
)

// DefaultSessionTimeout is the session timeout of a Store made without
// WithSessionTimeout.
const DefaultSessionTimeout = 10 * time.Second

// Option configures a Store.
type Option func(*Store)

// WithSessionTimeout sets how long after Session.Crash a session's
// ephemeral nodes and locks disappear.
func WithSessionTimeout(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.timeout = d
		}
	}
}

// Store is one in-process node tree shared by any number of sessions.
type Store struct {
	timeout time.Duration

	mu       sync.Mutex
	nodes    map[string]*node
	nextID   int64
	nextSess int64
	changed  chan struct{} // closed and replaced after every change
}

type node struct {
	data     []byte
	version  int64
	id       int64
	cversion uint64
	owner    int64 // session id of an ephemeral node, 0 when persistent
	children map[string]struct{}
}

func (n *node) clone() *node {
	c := *n
	c.children = make(map[string]struct{}, len(n.children))
	for k := range n.children {
		c.children[k] = struct{}{}
	}
	return &c
}

// NewStore returns an empty store holding only the root node "/".
func NewStore(opts ...Option) *Store {
	s := &Store{
		timeout: DefaultSessionTimeout,
		nodes:   map[string]*node{nodepath.Root: {id: 1, children: map[string]struct{}{}}},
		nextID:  2,
		changed: make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// NewSession opens a session on the store.
func (s *Store) NewSession() *Session {
	s.mu.Lock()
	s.nextSess++
	id := s.nextSess
	s.mu.Unlock()
	return &Session{store: s, id: id, done: make(chan struct{})}
}

// Factory returns a factory whose state managers are new sessions of s, for
// code that builds state managers from config. The config and logger are
// ignored.
func (s *Store) Factory() spi.StateManagerFactory {
	return func(spi.Config, *zap.Logger) (spi.StateManager, error) { return s.NewSession(), nil }
}

// wake returns a channel closed at the next change. Callers hold no lock.
func (s *Store) wake() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// notifyLocked wakes every watcher; the caller holds s.mu.
func (s *Store) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// removeOwnedLocked deletes the ephemeral nodes of session id.
func (s *Store) removeOwnedLocked(id int64) {
	removed := false
	for p, n := range s.nodes {
		if n.owner != id {
			continue
		}
		delete(s.nodes, p)
		if parent := s.nodes[nodepath.Parent(p)]; parent != nil {
			delete(parent.children, nodepath.Base(p))
			parent.cversion++
		}
		removed = true
	}
	if removed {
		s.notifyLocked()
	}
}

// tx is a copy-on-write view of the store's nodes used to apply a batch of
// ops atomically. The caller holds s.mu.
type tx struct {
	s     *Store
	over  map[string]*node // nil value: deleted
	owner int64
}

func (t *tx) get(p string) *node {
	if n, ok := t.over[p]; ok {
		return n
	}
	return t.s.nodes[p]
}

// mut returns a private copy of the existing node p for modification.
func (t *tx) mut(p string) *node {
	if n, ok := t.over[p]; ok {
		return n
	}
	n := t.s.nodes[p].clone()
	t.over[p] = n
	return n
}

func (t *tx) commit() {
	for p, n := range t.over {
		if n == nil {
			delete(t.s.nodes, p)
		} else {
			t.s.nodes[p] = n
		}
	}
	if len(t.over) > 0 {
		t.s.notifyLocked()
	}
}

func (t *tx) create(p string, data []byte, ephemeral bool) error {
	if t.get(p) != nil {
		return fmt.Errorf("create %s: %w", p, spi.ErrExists)
	}
	chain := append(nodepath.Ancestors(p), p)
	parent := nodepath.Root
	for i, q := range chain {
		if n := t.get(q); n != nil {
			if n.owner != 0 {
				return fmt.Errorf("create %s: parent %s is ephemeral: %w", p, q, smops.ErrEphemeralParent)
			}
			parent = q
			continue
		}
		n := &node{id: t.s.nextID, children: map[string]struct{}{}}
		t.s.nextID++
		if i == len(chain)-1 {
			n.data = slices.Clone(data)
			if ephemeral {
				n.owner = t.owner
			}
		}
		t.over[q] = n
		pn := t.mut(parent)
		pn.children[nodepath.Base(q)] = struct{}{}
		pn.cversion++
		parent = q
	}
	return nil
}

func (t *tx) set(p string, data []byte, version int64) (int64, error) {
	n := t.get(p)
	if n == nil {
		return 0, fmt.Errorf("set %s: %w", p, spi.ErrNotFound)
	}
	if version != spi.AnyVersion && version != n.version {
		return 0, fmt.Errorf("set %s: expected version %d, node has version %d: %w", p, version, n.version, spi.ErrVersionConflict)
	}
	m := t.mut(p)
	m.data = slices.Clone(data)
	m.version++
	return m.version, nil
}

func (t *tx) delete(p string, version int64) error {
	n := t.get(p)
	if n == nil {
		return nil
	}
	if version != spi.AnyVersion && version != n.version {
		return fmt.Errorf("delete %s: expected version %d, node has version %d: %w", p, version, n.version, spi.ErrVersionConflict)
	}
	t.deleteTree(p)
	pn := t.mut(nodepath.Parent(p))
	delete(pn.children, nodepath.Base(p))
	pn.cversion++
	return nil
}

func (t *tx) deleteTree(p string) {
	for name := range t.get(p).children {
		t.deleteTree(nodepath.Join(p, name))
	}
	t.over[p] = nil
}

func (t *tx) check(p string, version int64) error {
	n := t.get(p)
	if n == nil {
		return fmt.Errorf("check %s: %w", p, spi.ErrNotFound)
	}
	if version != spi.AnyVersion && version != n.version {
		return fmt.Errorf("check %s: expected version %d, node has version %d: %w", p, version, n.version, spi.ErrVersionConflict)
	}
	return nil
}

// Session is one session on a Store; it implements spi.StateManager.
type Session struct {
	store *Store
	done  chan struct{}

	// Guarded by store.mu.
	id      int64
	gen     uint64
	closed  bool
	crashed bool
}

var _ spi.StateManager = (*Session)(nil)

// begin checks the session and context and locks the store.
func (s *Session) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.store.mu.Lock()
	if s.closed {
		s.store.mu.Unlock()
		return fmt.Errorf("memory state manager: %w", spi.ErrClosed)
	}
	return nil
}

func (s *Session) end() { s.store.mu.Unlock() }

func (s *Session) newTx() *tx {
	return &tx{s: s.store, over: map[string]*node{}, owner: s.id}
}

// Get implements spi.StateManager.
func (s *Session) Get(ctx context.Context, path string) (spi.Node, error) {
	if err := nodepath.Check(path); err != nil {
		return spi.Node{}, err
	}
	if err := s.begin(ctx); err != nil {
		return spi.Node{}, err
	}
	defer s.end()
	n := s.store.nodes[path]
	if n == nil {
		return spi.Node{}, fmt.Errorf("get %s: %w", path, spi.ErrNotFound)
	}
	return spi.Node{Data: slices.Clone(n.data), Version: n.version, Ephemeral: n.owner != 0}, nil
}

// Children implements spi.StateManager.
func (s *Session) Children(ctx context.Context, path string) ([]string, error) {
	if err := nodepath.Check(path); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	n := s.store.nodes[path]
	if n == nil {
		return nil, fmt.Errorf("children of %s: %w", path, spi.ErrNotFound)
	}
	out := make([]string, 0, len(n.children))
	for c := range n.children {
		out = append(out, c)
	}
	slices.Sort(out)
	return out, nil
}

// Create implements spi.StateManager.
func (s *Session) Create(ctx context.Context, path string, data []byte, ephemeral bool) error {
	if err := nodepath.Check(path); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	t := s.newTx()
	if err := t.create(path, data, ephemeral); err != nil {
		return err
	}
	t.commit()
	return nil
}

// Set implements spi.StateManager.
func (s *Session) Set(ctx context.Context, path string, data []byte, version int64) (int64, error) {
	if err := smops.ValidateOne(spi.Op{Kind: spi.OpSet, Path: path, Version: version}); err != nil {
		return 0, err
	}
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.end()
	t := s.newTx()
	v, err := t.set(path, data, version)
	if err != nil {
		return 0, err
	}
	t.commit()
	return v, nil
}

// Delete implements spi.StateManager.
func (s *Session) Delete(ctx context.Context, path string, version int64) error {
	if err := smops.ValidateOne(spi.Op{Kind: spi.OpDelete, Path: path, Version: version}); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	t := s.newTx()
	if err := t.delete(path, version); err != nil {
		return err
	}
	t.commit()
	return nil
}

// Multi implements spi.StateManager.
func (s *Session) Multi(ctx context.Context, ops ...spi.Op) error {
	if err := smops.Validate(ops); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	t := s.newTx()
	for i, op := range ops {
		var err error
		switch op.Kind {
		case spi.OpCreate:
			err = t.create(op.Path, op.Data, false)
		case spi.OpSet:
			_, err = t.set(op.Path, op.Data, op.Version)
		case spi.OpDelete:
			err = t.delete(op.Path, op.Version)
		case spi.OpCheck:
			err = t.check(op.Path, op.Version)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", smops.Label(i, op), err)
		}
	}
	t.commit()
	return nil
}

// Watch implements spi.StateManager.
func (s *Session) Watch(ctx context.Context, path string) (<-chan spi.Event, error) {
	if err := nodepath.Check(path); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	s.end()
	st := s.store
	return watchstate.Start(ctx, path, watchstate.Source{
		Read: func(context.Context) (watchstate.State, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			n := st.nodes[path]
			if n == nil {
				return watchstate.State{}, nil
			}
			return watchstate.State{Exists: true, ID: n.id, Version: n.version, Children: n.cversion}, nil
		},
		Wake: st.wake,
		SessionGen: func() uint64 {
			st.mu.Lock()
			defer st.mu.Unlock()
			return s.gen
		},
		Done: s.done,
	})
}

// Lock implements spi.StateManager. The lock is an ephemeral node at path;
// a path used as a lock must not hold data.
func (s *Session) Lock(ctx context.Context, path string) (func() error, error) {
	if err := nodepath.Check(path); err != nil {
		return nil, err
	}
	for {
		wake := s.store.wake()
		err := s.Create(ctx, path, nil, true)
		if err == nil {
			break
		}
		if !errors.Is(err, spi.ErrExists) {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("lock %s: %w (%v)", path, spi.ErrLockHeld, ctx.Err())
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, fmt.Errorf("lock %s: %w (%v)", path, spi.ErrLockHeld, ctx.Err())
		case <-s.done:
			return nil, fmt.Errorf("lock %s: %w", path, spi.ErrClosed)
		}
	}
	s.store.mu.Lock()
	owner := s.id
	s.store.mu.Unlock()
	var once sync.Once
	return func() error {
		once.Do(func() {
			st := s.store
			st.mu.Lock()
			defer st.mu.Unlock()
			if n := st.nodes[path]; n != nil && n.owner == owner {
				t := &tx{s: st, over: map[string]*node{}}
				_ = t.delete(path, spi.AnyVersion)
				t.commit()
			}
		})
		return nil
	}, nil
}

// SessionTimeout implements spi.StateManager.
func (s *Session) SessionTimeout() time.Duration { return s.store.timeout }

// Close implements spi.StateManager: the session's ephemeral nodes and locks
// are removed and its watches end. Close after Crash does nothing more.
func (s *Session) Close() error {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.done)
	st.removeOwnedLocked(s.id)
	return nil
}

// Crash simulates the death of the session's process: the session stops
// working at once (calls fail with spi.ErrClosed, watches end), but its
// ephemeral nodes and locks stay until SessionTimeout has passed, as they
// would in ZooKeeper.
func (s *Session) Crash() {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	if s.closed {
		return
	}
	s.closed, s.crashed = true, true
	close(s.done)
	id := s.id
	time.AfterFunc(st.timeout, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.removeOwnedLocked(id)
	})
}

// Expire simulates a session expiry the process survives (a long pause or a
// partition): the session's ephemeral nodes and locks are removed now, its
// watches report spi.EventSessionLost, and the session carries on as a new
// session.
func (s *Session) Expire() {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	if s.closed {
		return
	}
	st.removeOwnedLocked(s.id)
	st.nextSess++
	s.id = st.nextSess
	s.gen++
	st.notifyLocked()
}
