package wire

import (
	"encoding/binary"
	"fmt"
)

// Data-plane control frames of the back pressure protocol between stream
// managers (see docs/protocol.md, "Back pressure").
const (
	// FrameBackPressure carries a stream manager's back pressure state to
	// a peer: BackPressure encoded by AppendBackPressure. It is state, not
	// an event: the sender re-sends it periodically.
	FrameBackPressure FrameType = 5
)

// Causes of back pressure announced in a FrameBackPressure.
const (
	// CauseNone: the sender is not in back pressure.
	CauseNone uint8 = 0
	// CauseLocalInstance: a queue toward one of the sender's local
	// instances passed the high watermark.
	CauseLocalInstance uint8 = 1
	// CauseRemoteStMgr: a queue toward one of the sender's peer stream
	// managers passed the high watermark.
	CauseRemoteStMgr uint8 = 2
)

// backPressureSize is the payload size of a FrameBackPressure: container
// (4 bytes, big-endian), active (1 byte, 0 or 1), cause (1 byte, a
// bitwise OR of the causes).
const backPressureSize = 6

// BackPressure is the state a FrameBackPressure announces.
type BackPressure struct {
	Container int32
	Active    bool
	Cause     uint8
}

// AppendBackPressure appends b as a complete FrameBackPressure (header
// included).
func AppendBackPressure(dst []byte, b BackPressure) []byte {
	dst = AppendFrameHeader(dst, FrameBackPressure, backPressureSize)
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.Container))
	active := byte(0)
	if b.Active {
		active = 1
	}
	return append(dst, active, b.Cause)
}

// ParseBackPressure decodes the payload of a FrameBackPressure.
func ParseBackPressure(payload []byte) (BackPressure, error) {
	if len(payload) != backPressureSize {
		return BackPressure{}, fmt.Errorf("%w: back pressure frame of %d bytes, want %d", ErrCorrupt, len(payload), backPressureSize)
	}
	if payload[4] > 1 {
		return BackPressure{}, fmt.Errorf("%w: back pressure frame with active flag %d, want 0 or 1", ErrCorrupt, payload[4])
	}
	return BackPressure{Container: int32(binary.BigEndian.Uint32(payload)), Active: payload[4] == 1, Cause: payload[5]}, nil
}
