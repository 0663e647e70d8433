package wire

import (
	"encoding/binary"
	"fmt"
)

// Data-plane frames of effectively-once checkpoints (see docs/protocol.md,
// "Checkpoints").
const (
	// FrameBarrier is a checkpoint barrier from one task to one
	// downstream task, routed like a data frame (its destination task is
	// at the same offset) and in order with the data frames of its source.
	FrameBarrier FrameType = 7
	// FrameEpoch marks, on a stream manager to stream manager connection,
	// that everything after it was sent in the given recovery epoch.
	FrameEpoch FrameType = 8
)

// barrierSize is the payload size of a FrameBarrier: destination task and
// source task (4 bytes each), checkpoint id and epoch (8 bytes each, all
// big-endian), and a flags byte.
const barrierSize = 25

// BarrierAborted flags a barrier its stream manager released without
// aligning it (the alignment timed out): the task does not save this
// checkpoint, it reports the failure and forwards the barrier.
const BarrierAborted uint8 = 1

// Barrier is the content of a FrameBarrier.
type Barrier struct {
	Dest, Src  uint32
	Checkpoint int64
	Epoch      int64
	Flags      uint8
}

// AppendBarrier appends b as a complete FrameBarrier (header included).
func AppendBarrier(dst []byte, b Barrier) []byte {
	dst = AppendFrameHeader(dst, FrameBarrier, barrierSize)
	dst = binary.BigEndian.AppendUint32(dst, b.Dest)
	dst = binary.BigEndian.AppendUint32(dst, b.Src)
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.Checkpoint))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.Epoch))
	return append(dst, b.Flags)
}

// ParseBarrier decodes the payload of a FrameBarrier.
func ParseBarrier(payload []byte) (Barrier, error) {
	if len(payload) != barrierSize {
		return Barrier{}, fmt.Errorf("%w: barrier frame of %d bytes, want %d", ErrCorrupt, len(payload), barrierSize)
	}
	b := Barrier{
		Dest:       binary.BigEndian.Uint32(payload),
		Src:        binary.BigEndian.Uint32(payload[4:]),
		Checkpoint: int64(binary.BigEndian.Uint64(payload[8:])),
		Epoch:      int64(binary.BigEndian.Uint64(payload[16:])),
		Flags:      payload[24],
	}
	if b.Checkpoint <= 0 || b.Epoch < 0 || b.Flags&^BarrierAborted != 0 {
		return Barrier{}, fmt.Errorf("%w: barrier with checkpoint %d, epoch %d, flags %#x", ErrCorrupt, b.Checkpoint, b.Epoch, b.Flags)
	}
	return b, nil
}

// AppendEpoch appends a complete FrameEpoch (header included).
func AppendEpoch(dst []byte, epoch int64) []byte {
	dst = AppendFrameHeader(dst, FrameEpoch, 8)
	return binary.BigEndian.AppendUint64(dst, uint64(epoch))
}

// ParseEpoch decodes the payload of a FrameEpoch.
func ParseEpoch(payload []byte) (int64, error) {
	if len(payload) != 8 {
		return 0, fmt.Errorf("%w: epoch frame of %d bytes, want 8", ErrCorrupt, len(payload))
	}
	e := int64(binary.BigEndian.Uint64(payload))
	if e < 0 {
		return 0, fmt.Errorf("%w: negative epoch %d", ErrCorrupt, e)
	}
	return e, nil
}

// FirstSource returns the source task of the first record of a data
// frame's payload: every record of a frame comes from the one task that
// built it. ok is false for a frame without records or a damaged one.
func FirstSource(payload []byte) (src uint32, ok bool) {
	if len(payload) <= dataHeaderSize {
		return 0, false
	}
	rec := payload[dataHeaderSize:]
	_, n := binary.Uvarint(rec) // record length
	if n <= 0 {
		return 0, false
	}
	s, m := binary.Uvarint(rec[n:])
	if m <= 0 || s > 1<<32-1 {
		return 0, false
	}
	return uint32(s), true
}
