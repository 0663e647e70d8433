package spi

import (
	"context"

	"go.uber.org/zap"
)

// CheckpointKey names the saved state of one task in one checkpoint of a
// topology (effectively-once, DESIGN.md §6).
type CheckpointKey struct {
	Topology   string
	Checkpoint int64
	Task       int32
}

// CheckpointStorage stores the state of effectively-once checkpoints: one
// blob per task and checkpoint. The checkpoint manager of every container
// uses one; several containers (processes, machines) share a storage, each
// storing the tasks of its own container.
//
// Contract:
//   - Store is atomic and durable: once it returns nil, Load returns exactly
//     those bytes, also after a crash of the process or machine; a Store
//     interrupted by a crash leaves the key as it was (absent or its old
//     bytes), never a truncated blob. Storing a key again replaces it.
//   - Load returns the bytes of a key, or an error wrapping ErrNotFound.
//     Stored bytes that are damaged give an error wrapping ErrCorrupt.
//   - List returns the checkpoint ids of a topology that hold at least one
//     task's state, ascending; none is an empty (non-nil) list, not an
//     error. A store or delete in progress (or interrupted by a crash) is
//     not a checkpoint of its own.
//   - Delete removes every task's state of one checkpoint; deleting a
//     checkpoint that does not exist is not an error. Deletes run
//     concurrently with stores of other checkpoints, also from other
//     containers.
//   - Topology names are valid names (core/names); an implementation must
//     still never build a path outside its root from one, and refuses
//     (with an error) a name that is not valid. Checkpoint and task ids
//     are not negative; a negative one is refused too.
//   - Every method honours ctx: one called with an ended context fails
//     with an error wrapping ctx.Err() and changes nothing. Close is
//     idempotent; a call after Close fails with an error wrapping
//     ErrClosed. State stored through one storage outlives it.
//
// checkpoints/checkpointtest is the conformance suite of this contract.
type CheckpointStorage interface {
	Store(ctx context.Context, key CheckpointKey, state []byte) error
	Load(ctx context.Context, key CheckpointKey) ([]byte, error)
	List(ctx context.Context, topology string) ([]int64, error)
	Delete(ctx context.Context, topology string, checkpoint int64) error
	Close() error
}

// CheckpointStorageFactory builds a checkpoint storage from its config.
type CheckpointStorageFactory func(cfg Config, log *zap.Logger) (CheckpointStorage, error)

var checkpointStorages = newRegistry[CheckpointStorageFactory](KindCheckpointStorage, "checkpoint storage")

// RegisterCheckpointStorage registers a built-in checkpoint storage with
// the config keys it reads.
func RegisterCheckpointStorage(name string, f CheckpointStorageFactory, keys ...Key) {
	checkpointStorages.register(name, f, keys)
}

// LookupCheckpointStorage returns the checkpoint storage factory named name.
func LookupCheckpointStorage(name string) (CheckpointStorageFactory, error) {
	return checkpointStorages.lookup(name)
}

// CheckpointStorageNames lists the registered checkpoint storages.
func CheckpointStorageNames() []string { return checkpointStorages.names() }
