package spi

import (
	"context"
	"time"
)

// AnyVersion makes a conditional Set, Delete or Check unconditional.
const AnyVersion int64 = -1

// Node is the content of one state node.
type Node struct {
	Data []byte
	// Version increases by one on every write of the node; a new node has
	// version 0.
	Version int64
	// Ephemeral reports whether the node lives only as long as the session
	// that created it.
	Ephemeral bool
}

// OpKind is the kind of one operation of an atomic Multi.
type OpKind int

// The operations a Multi can contain.
const (
	// OpCreate creates Path with Data (parents are created as needed);
	// fails with ErrExists when Path exists.
	OpCreate OpKind = iota + 1
	// OpSet overwrites Path; fails with ErrNotFound when absent and with
	// ErrVersionConflict when Version is not AnyVersion and differs.
	OpSet
	// OpDelete deletes Path and everything below it; deleting a missing
	// node succeeds.
	OpDelete
	// OpCheck fails with ErrVersionConflict unless Path has Version, or
	// with ErrNotFound unless Path exists when Version is AnyVersion.
	OpCheck
)

// Op is one operation of an atomic Multi.
type Op struct {
	Kind    OpKind
	Path    string
	Data    []byte
	Version int64
}

// EventType says what changed at a watched path.
type EventType int

// Watch event types.
const (
	EventCreated EventType = iota + 1
	EventDeleted
	EventDataChanged
	EventChildrenChanged
	// EventSessionLost: the backend lost its session; ephemeral nodes of
	// this session may be gone and the watcher should re-read state.
	EventSessionLost
)

// Event is one change seen by a watch.
type Event struct {
	Type EventType
	Path string
}

// StateManager is a hierarchical store of small nodes shared by the
// submitter, the schedulers and the topology's daemons: ZooKeeper's model
// (persistent and ephemeral nodes, versions, watches, atomic multi-op)
// which the local filesystem backend emulates on one host.
//
// Paths are absolute and slash-separated ("/topologies/wordcount"); they are
// relative to the backend's configured root. Names in paths are restricted
// to [A-Za-z0-9._-]. Node data is opaque bytes; package core/state gives the
// typed Heron node tree on top.
//
// A StateManager value is one session: ephemeral nodes it creates disappear
// when it is closed, when its process dies, or when its session expires
// (after SessionTimeout without contact with the backend). Implementations
// are safe for concurrent use.
type StateManager interface {
	// Get returns the node at path, or ErrNotFound. A backend that stores
	// nodes in its own format returns an error wrapping ErrCorrupt for a
	// node whose storage is damaged; Children still lists such a node and
	// an unconditional Delete (and Multi's OpDelete) removes it.
	Get(ctx context.Context, path string) (Node, error)
	// Children returns the names (not paths) of path's children, sorted,
	// or ErrNotFound when path does not exist.
	Children(ctx context.Context, path string) ([]string, error)
	// Create creates a node at path with data, creating missing parents as
	// persistent empty nodes. It fails with ErrExists when path exists. An
	// ephemeral node cannot have children.
	Create(ctx context.Context, path string, data []byte, ephemeral bool) error
	// Set overwrites the data at path if its version is version (or
	// unconditionally with AnyVersion) and returns the new version.
	Set(ctx context.Context, path string, data []byte, version int64) (int64, error)
	// Delete removes path and everything below it if path's version is
	// version (or unconditionally with AnyVersion). Deleting a missing node
	// succeeds.
	Delete(ctx context.Context, path string, version int64) error
	// Multi applies ops atomically: either all of them take effect or none
	// does. The error names the first failing op.
	Multi(ctx context.Context, ops ...Op) error
	// Watch reports changes of the node at path (created, deleted, data
	// changed) and of its list of children until ctx ends; the channel is
	// closed then. Events may be coalesced; a watcher re-reads state after
	// each event. The node need not exist yet.
	Watch(ctx context.Context, path string) (<-chan Event, error)
	// Lock takes the exclusive lock named by path, waiting until ctx ends
	// (then ErrLockHeld). The lock is released by unlock or when the
	// session ends.
	Lock(ctx context.Context, path string) (unlock func() error, err error)
	// SessionTimeout is how long after the owner's death its ephemeral
	// nodes and locks disappear.
	SessionTimeout() time.Duration
	// Close ends the session: its ephemeral nodes and locks are removed.
	Close() error
}
