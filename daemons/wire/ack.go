package wire

import (
	"encoding/binary"
	"fmt"
)

// Data-plane control frames of at-least-once delivery (in the reserved
// 2..15 range; 5 is FrameBackPressure). Their payloads use the hand-written
// encodings of this file, not protobuf: acks are as frequent as tuples.
const (
	// FrameAck XORs each update's Xor into its root's value; a root whose
	// value returns to 0 is complete.
	FrameAck FrameType = 2
	// FrameFail fails each update's root at once (Xor is ignored).
	FrameFail FrameType = 3
	// FrameAckResult carries completed and failed roots from a ledger to
	// the spout task that owns them.
	FrameAckResult FrameType = 4
	// FrameAckInit registers new tuple trees with the ledger of their
	// spout task: each update's Xor is the XOR of the edge ids of every
	// copy the spout sent. It must reach the ledger before those copies
	// can be acked, so a sender puts it ahead of the data it covers.
	FrameAckInit FrameType = 6
)

// MaxAckUpdates bounds the updates or results of one ack frame; a payload
// claiming more is corrupt.
const MaxAckUpdates = 1 << 16

// AckUpdate is one change to a root's XOR value.
type AckUpdate struct {
	Root Root
	Xor  uint64
}

// AckResult tells a spout task how one of its roots ended.
type AckResult struct {
	Root Root
	// Acked is true when the tree completed, false when it failed.
	Acked bool
}

// minAckUpdateSize is the smallest encoded update: a 1-byte task and two
// 8-byte ids.
const minAckUpdateSize = 1 + 8 + 8

// minAckResultSize is the smallest encoded result: a 1-byte task, an
// 8-byte id and a status byte.
const minAckResultSize = 1 + 8 + 1

// AppendAckUpdates appends the payload of a FrameAckInit, FrameAck or
// FrameFail frame: a uvarint count, then per update the root task
// (uvarint), the root id and the xor (8 bytes little-endian each). It does
// not allocate when dst has room.
func AppendAckUpdates(dst []byte, updates []AckUpdate) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(updates)))
	for _, u := range updates {
		dst = binary.AppendUvarint(dst, uint64(u.Root.Task))
		dst = binary.LittleEndian.AppendUint64(dst, u.Root.ID)
		dst = binary.LittleEndian.AppendUint64(dst, u.Xor)
	}
	return dst
}

// DecodeAckUpdates decodes a payload written by AppendAckUpdates, appending
// to dst[:0].
func DecodeAckUpdates(payload []byte, dst []AckUpdate) ([]AckUpdate, error) {
	dst = dst[:0]
	n, k := binary.Uvarint(payload)
	if k <= 0 {
		return dst, fmt.Errorf("%w: ack update count", ErrCorrupt)
	}
	p := k
	if n > MaxAckUpdates || n*minAckUpdateSize > uint64(len(payload)-p) {
		return dst, fmt.Errorf("%w: ack frame claims %d updates in %d bytes", ErrCorrupt, n, len(payload))
	}
	for i := uint64(0); i < n; i++ {
		task, k := binary.Uvarint(payload[p:])
		if k <= 0 || task > 1<<31 {
			return dst, fmt.Errorf("%w: ack update %d: root task", ErrCorrupt, i)
		}
		p += k
		if len(payload)-p < 16 {
			return dst, fmt.Errorf("%w: ack update %d truncated", ErrCorrupt, i)
		}
		dst = append(dst, AckUpdate{
			Root: Root{Task: uint32(task), ID: binary.LittleEndian.Uint64(payload[p:])},
			Xor:  binary.LittleEndian.Uint64(payload[p+8:]),
		})
		p += 16
	}
	if p != len(payload) {
		return dst, fmt.Errorf("%w: %d bytes after the last ack update", ErrCorrupt, len(payload)-p)
	}
	return dst, nil
}

// AppendAckResults appends the payload of a FrameAckResult frame: a uvarint
// count, then per result the root task (uvarint), the root id (8 bytes
// little-endian) and a status byte (1 acked, 0 failed).
func AppendAckResults(dst []byte, results []AckResult) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(results)))
	for _, r := range results {
		dst = binary.AppendUvarint(dst, uint64(r.Root.Task))
		dst = binary.LittleEndian.AppendUint64(dst, r.Root.ID)
		status := byte(0)
		if r.Acked {
			status = 1
		}
		dst = append(dst, status)
	}
	return dst
}

// DecodeAckResults decodes a payload written by AppendAckResults, appending
// to dst[:0].
func DecodeAckResults(payload []byte, dst []AckResult) ([]AckResult, error) {
	dst = dst[:0]
	n, k := binary.Uvarint(payload)
	if k <= 0 {
		return dst, fmt.Errorf("%w: ack result count", ErrCorrupt)
	}
	p := k
	if n > MaxAckUpdates || n*minAckResultSize > uint64(len(payload)-p) {
		return dst, fmt.Errorf("%w: ack result frame claims %d results in %d bytes", ErrCorrupt, n, len(payload))
	}
	for i := uint64(0); i < n; i++ {
		task, k := binary.Uvarint(payload[p:])
		if k <= 0 || task > 1<<31 {
			return dst, fmt.Errorf("%w: ack result %d: root task", ErrCorrupt, i)
		}
		p += k
		if len(payload)-p < 9 {
			return dst, fmt.Errorf("%w: ack result %d truncated", ErrCorrupt, i)
		}
		status := payload[p+8]
		if status > 1 {
			return dst, fmt.Errorf("%w: ack result %d: status %d is neither 0 (failed) nor 1 (acked)", ErrCorrupt, i, status)
		}
		dst = append(dst, AckResult{Root: Root{Task: uint32(task), ID: binary.LittleEndian.Uint64(payload[p:])}, Acked: status == 1})
		p += 9
	}
	if p != len(payload) {
		return dst, fmt.Errorf("%w: %d bytes after the last ack result", ErrCorrupt, len(payload)-p)
	}
	return dst, nil
}

// AppendAckFrame appends a whole frame of type t (FrameAckInit, FrameAck or
// FrameFail) carrying updates.
func AppendAckFrame(dst []byte, t FrameType, updates []AckUpdate) []byte {
	dst, start := beginFrame(dst, t)
	return endFrame(AppendAckUpdates(dst, updates), start)
}

// AppendAckResultFrame appends a whole FrameAckResult frame.
func AppendAckResultFrame(dst []byte, results []AckResult) []byte {
	dst, start := beginFrame(dst, FrameAckResult)
	return endFrame(AppendAckResults(dst, results), start)
}

// IsAckFrame reports whether t is one of the acking control frames.
func IsAckFrame(t FrameType) bool {
	switch t {
	case FrameAck, FrameFail, FrameAckResult, FrameAckInit:
		return true
	}
	return false
}
