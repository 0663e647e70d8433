package stmgr

import (
	"context"
	"fmt"
	"net"

	"github.com/egret-stream/egret/daemons/wire"
)

// Direct hand-off (wire.Attacher): the stream manager attaches a
// *directInstance (a wire.StMgrHandler) to the in-memory connection of an
// instance in its process that attached a wire.FrameHandler. The
// instance's goroutine routes what it emits (blocking, as a full socket
// would, while its destination queue is full or back pressure holds a
// spout), and the stream manager's writer goroutine of the task delivers
// to the instance what a socket reader would have read.

// directInstance is the handler the stream manager attaches for an
// in-process instance: its methods do what the connection's reader does
// with each frame. The instance calls them from one goroutine at a time.
type directInstance struct {
	s    *StMgr
	in   *inbound
	ic   *instConn
	who  string
	conn net.Conn
}

// HandleData takes a data frame for task dest from the instance.
func (d *directInstance) HandleData(ctx context.Context, dest uint32, count int, records []byte) error {
	if n := wire.DataBodySize(len(records)); n > d.s.set.maxFrame {
		return d.fail(fmt.Errorf("%w: %d bytes, limit %d", wire.ErrFrameTooLarge, n, d.s.set.maxFrame))
	}
	if err := d.ready(ctx); err != nil {
		return err
	}
	f := d.s.getFrame()
	f.body = wire.AppendDataBody(f.body[:0], dest, count, records)
	return d.handle(ctx, f)
}

// HandleFrame takes any other frame from the instance.
func (d *directInstance) HandleFrame(ctx context.Context, body []byte) error {
	if len(body) == 0 || len(body) > d.s.set.maxFrame {
		return d.fail(fmt.Errorf("%w: frame of %d bytes (limit %d)", wire.ErrCorrupt, len(body), d.s.set.maxFrame))
	}
	if err := d.ready(ctx); err != nil {
		return err
	}
	f := d.s.getFrame()
	f.body = append(f.body[:0], body...)
	return d.handle(ctx, f)
}

// Idle reports whether nothing is queued toward task dest: the queue of
// the task when it is local, else that of its container's peer.
func (d *directInstance) Idle(dest uint32) bool {
	rt := d.s.table.Load()
	if rt == nil {
		return true
	}
	if int(dest) < len(rt.local) && rt.local[dest] != nil {
		return rt.local[dest].q.Empty()
	}
	if int(dest) < len(rt.container) {
		if c := rt.container[dest]; c > 0 && int(c) < len(rt.peers) && rt.peers[c] != nil {
			return rt.peers[c].q.Empty()
		}
	}
	return true
}

// ready waits while back pressure holds a spout's frames; it fails once
// the connection is closed or ctx ends.
func (d *directInstance) ready(ctx context.Context) error {
	select {
	case <-d.ic.done:
		return net.ErrClosed
	default:
	}
	if !d.in.wait(ctx, d.ic.done) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return net.ErrClosed
	}
	return nil
}

func (d *directInstance) handle(ctx context.Context, f *frame) error {
	if err := d.in.handle(ctx, f, wire.FrameType(f.body[0]), f.body[1:]); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return d.fail(err)
	}
	return nil
}

// fail closes the connection for a frame that breaks the protocol, as its
// reader would.
func (d *directInstance) fail(err error) error {
	d.s.closeReason(d.who, d.conn, err)
	d.ic.close()
	return err
}

// directWriter is the frameWriter toward an in-process instance.
type directWriter struct {
	ctx  context.Context
	sink wire.FrameHandler
}

func (w directWriter) writeFramed(b []byte) error { return wire.HandleFrames(w.ctx, w.sink, b) }

func (w directWriter) writeFrame(body []byte) error { return wire.HandleFrame(w.ctx, w.sink, body) }

func (directWriter) flush() error { return nil }

// planThenDirect is the frameWriter toward an in-process instance that
// registered before this stream manager had a plan placing it: the
// instance waits for that first plan on the connection, so the first
// frames written (the plan, the only thing writeLoop writes before one)
// go there, and everything after them to the sink.
type planThenDirect struct {
	conn   *connWriter
	direct directWriter
	sent   bool
}

func (w *planThenDirect) writeFramed(b []byte) error {
	if w.sent {
		return w.direct.writeFramed(b)
	}
	if err := w.conn.writeFramed(b); err != nil {
		return err
	}
	w.sent = true
	return w.conn.flush()
}

func (w *planThenDirect) writeFrame(body []byte) error {
	if !w.sent {
		return fmt.Errorf("%w: a frame before the plan", wire.ErrCorrupt)
	}
	return w.direct.writeFrame(body)
}

func (w *planThenDirect) flush() error { return nil }

var _ wire.StMgrHandler = (*directInstance)(nil)
