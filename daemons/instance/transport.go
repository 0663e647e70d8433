package instance

import (
	"context"

	"github.com/egret-stream/egret/daemons/wire"
)

// MsgKind is the kind of a message delivered to an instance.
type MsgKind int

// Message kinds.
const (
	// MsgData carries a batch of tuples for the instance's task.
	MsgData MsgKind = iota + 1
	// MsgActivate and MsgDeactivate start and stop a spout's NextTuple
	// calls.
	MsgActivate
	MsgDeactivate
	// MsgAckResults carries completed and failed roots of a spout task
	// (at-least-once mode).
	MsgAckResults
	// MsgConfig carries the runtime config settings that changed (an
	// empty value: deleted), applied without a restart.
	MsgConfig
	// MsgLayout carries a new task layout (Relayout, from
	// PrepareRelayout) that the instance follows without a restart.
	MsgLayout
	// Effectively-once: MsgBarrier (Barrier) makes the task save its
	// states and forward the barrier; MsgRestore (Checkpoint, Epoch,
	// State or OldTasks) replaces them; MsgStartProcessing (Epoch) ends the pause
	// after a restore; MsgCheckpointComplete (Checkpoint, Epoch) tells a
	// CheckpointListener.
	MsgBarrier
	MsgRestore
	MsgStartProcessing
	MsgCheckpointComplete
	// MsgTick makes a bolt execute one tick tuple now (api.NewTickTuple,
	// whatever its tick frequency); Handled is called after what the tick
	// emitted was sent. The in-process runner's drain sends it as the
	// final tick of the bolts that have a tick frequency. Spouts ignore it.
	MsgTick
	// MsgSync makes a bolt that holds tuples outside its Execute calls
	// (api.Syncer: a shell bolt's subprocess) process them; Handled is
	// called after what they emitted was sent. The in-process runner's
	// drain sends it to every bolt, upstream first. Spouts and other
	// bolts ignore it.
	MsgSync
)

// Msg is one message delivered to an instance.
type Msg struct {
	Kind  MsgKind
	Batch *wire.Batch
	// Acks are the results of a MsgAckResults message.
	Acks []wire.AckResult
	// Config are the changed settings of a MsgConfig message.
	Config map[string]string
	// Relayout is the new layout of a MsgLayout message.
	Relayout *Relayout
	// Barrier, Checkpoint, Epoch and State are the contents of the
	// checkpoint messages.
	Barrier    wire.Barrier
	Checkpoint int64
	Epoch      int64
	State      []byte
	// OldTasks, in a MsgRestore, are the tasks of the instance's
	// component at Checkpoint when it was rescaled since (index order):
	// the instance restores its share of their checkpoints (State is then
	// empty).
	OldTasks []int32
	// Handled, when set, is called once the instance has acted on the
	// message (for a deactivation: after flushing what the spout emitted).
	Handled func()
}

// Transport connects an instance to the rest of the topology.
type Transport interface {
	// Send hands a batch of tuples addressed to b.Dest to the transport,
	// which owns it afterwards. It blocks while the path to the
	// destination is full (back pressure) and fails when ctx ends.
	Send(ctx context.Context, b *wire.Batch) error
	// Idle reports whether nothing is queued toward dest, so that a batch
	// sent now goes out at once. The instance flushes eagerly when the
	// path is idle and batches when it is busy.
	Idle(dest uint32) bool
	// NewBatch returns an empty batch for dest, reusing pooled buffers.
	NewBatch(dest uint32) *wire.Batch
	// Done is called when the instance has consumed an inbound batch and
	// everything it emitted while processing it has been sent.
	Done(b *wire.Batch)
	// SendAcks hands acking updates to the ledgers of their roots' spout
	// tasks; kind is wire.FrameAckInit, wire.FrameAck or wire.FrameFail.
	// The transport does not keep updates after it returns. Updates of a
	// kind sent before a batch reach the ledger before that batch's tuples
	// can be acked. Only called in at-least-once mode.
	SendAcks(ctx context.Context, kind wire.FrameType, updates []wire.AckUpdate) error
	// Inbox delivers the instance's messages.
	Inbox() <-chan Msg
}
