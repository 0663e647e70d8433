package wire

import (
	"context"
	"encoding/binary"
	"fmt"
)

// Direct hand-off (topology.container.mode process-per-container): an
// instance that shares its stream manager's process registers over an
// in-memory connection (internal/memconn) that carries, beside its bytes,
// one object attached by each end. The instance's gateway attaches a
// FrameHandler for the frames toward the instance; the stream manager
// attaches a StMgrHandler for the frames toward it. After registration
// each side calls the other's handler with the frames it would have
// written to the connection, in the same order; the connection then only
// carries the registration and tells either side when the other closed
// it. A frame crosses in one copy and no goroutine hand-off.

// Attacher is a connection whose other end is in this process.
type Attacher interface {
	// Attach sets the object this end offers its peer.
	Attach(v any)
	// Peer returns the object the other end attached (nil if none).
	Peer() any
}

// FrameHandler takes, as calls, the frames one side would write to the
// connection. A call may block as a full socket would.
type FrameHandler interface {
	// HandleData takes a data frame's contents; records is not kept.
	HandleData(ctx context.Context, dest uint32, count int, records []byte) error
	// HandleFrame takes any other frame's body (type byte and payload);
	// body is not kept.
	HandleFrame(ctx context.Context, body []byte) error
}

// StMgrHandler is the FrameHandler an in-process stream manager attaches.
type StMgrHandler interface {
	FrameHandler
	// Idle reports whether nothing is queued toward task dest.
	Idle(dest uint32) bool
}

// HandleFrames hands every frame of b (whole frames, headers included) to
// h, data frames through HandleData.
func HandleFrames(ctx context.Context, h FrameHandler, b []byte) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return fmt.Errorf("%w: truncated frame", ErrCorrupt)
		}
		n := int(binary.BigEndian.Uint32(b))
		if n == 0 || n > len(b)-4 {
			return fmt.Errorf("%w: frame of %d bytes in %d", ErrCorrupt, n, len(b)-4)
		}
		if err := HandleFrame(ctx, h, b[4:4+n]); err != nil {
			return err
		}
		b = b[4+n:]
	}
	return nil
}

// HandleFrame hands one frame body (type byte and payload) to h, a data
// frame through HandleData.
func HandleFrame(ctx context.Context, h FrameHandler, body []byte) error {
	if len(body) > 0 && FrameType(body[0]) == FrameData {
		dest, count, records, err := ParseDataFrame(body[1:])
		if err != nil {
			return err
		}
		return h.HandleData(ctx, dest, count, records)
	}
	return h.HandleFrame(ctx, body)
}
