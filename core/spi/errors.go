package spi

import "errors"

// Sentinel errors returned (wrapped) by SPI implementations. Callers test them
// with errors.Is.
var (
	// ErrNotFound: the node, package, job or container does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: a node that must be created already exists.
	ErrExists = errors.New("already exists")
	// ErrVersionConflict: a conditional write or delete saw another version.
	ErrVersionConflict = errors.New("version conflict")
	// ErrNotEmpty: a node with children cannot be deleted non-recursively.
	ErrNotEmpty = errors.New("node has children")
	// ErrLockHeld: a lock could not be taken before the context ended.
	ErrLockHeld = errors.New("lock held by another owner")
	// ErrClosed: the implementation was closed.
	ErrClosed = errors.New("closed")
	// ErrUnsupported: the backend does not implement an optional operation.
	ErrUnsupported = errors.New("operation not supported by this backend")
	// ErrCannotFit: a topology does not fit the packing constraints.
	ErrCannotFit = errors.New("topology does not fit")
	// ErrCorrupt: a node exists but its stored bytes cannot be read or
	// are not what the node must hold (truncated, garbage, another type).
	// An unconditional delete still removes it.
	ErrCorrupt = errors.New("corrupt")
	// ErrUnknownBackend: no built-in implementation has the requested name.
	ErrUnknownBackend = errors.New("unknown backend")
	// ErrPluginExited: the process of an external backend (a plugin) is
	// gone: it crashed, was killed, or exited on its own. The calls on its
	// value fail with it from then on.
	ErrPluginExited = errors.New("plugin exited")
)
