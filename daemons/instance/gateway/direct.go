package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/egret-stream/egret/daemons/wire"
)

// Direct hand-off (topology.container.mode process-per-container, the
// protocol is wire.Attacher's): when the stream manager is in this
// process, the connection is in memory and carries, beside its bytes, one
// object attached by each end. The gateway attaches an inSink (a
// wire.FrameHandler) before it registers; a stream manager that finds it
// attaches a wire.StMgrHandler before it responds. From then on the frames that would cross the connection
// are calls instead, in the same order: the instance's goroutine hands its
// batches, acking updates and checkpoint frames to the stmgrSink (which
// routes them at once, blocking while a destination is full or back
// pressure holds a spout), and the stream manager's writer of this task
// hands its frames to the inSink (which puts them on the inbox, as the
// reader would). No writer goroutine, no byte buffer in between; the
// connection stays for the registration and to tell either side that the
// other is gone. Batches queued while disconnected go first when a direct
// session starts.

// directOut is the outbound side of a direct session.
type directOut struct {
	sink wire.StMgrHandler
	// ctx ends when the session stops or the instance is stopped.
	ctx context.Context
	s   *session
}

// fail ends the session after a failed hand-off, unless the session or
// the instance is stopping anyway.
func (d *directOut) fail(err error) {
	if d.ctx.Err() == nil {
		d.s.fail(fmt.Errorf("write: %w", err))
	}
}

// inSink is what the gateway attaches: the stream manager's writer hands
// it the frames it would write to the connection. Frames wait for the
// session to start.
type inSink struct {
	g       *gateway
	started chan struct{} // closed once s is set
	s       *session
}

func (k *inSink) session(ctx context.Context) (*session, error) {
	select {
	case <-k.started:
		return k.s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// HandleData takes a data frame for this task.
func (k *inSink) HandleData(ctx context.Context, dest uint32, count int, records []byte) error {
	s, err := k.session(ctx)
	if err != nil {
		return err
	}
	if err := k.g.checkData(dest, count, len(records)); err != nil {
		return k.fail(s, err)
	}
	b := k.g.NewBatch(dest)
	b.Buf = append(b.Buf, records...)
	b.Count = count
	return k.g.deliverBatch(s, ctx.Done(), b)
}

// HandleFrame takes any other frame.
func (k *inSink) HandleFrame(ctx context.Context, body []byte) error {
	s, err := k.session(ctx)
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return k.fail(s, fmt.Errorf("%w: empty frame", wire.ErrCorrupt))
	}
	if err := k.g.handleControl(s, ctx.Done(), wire.FrameType(body[0]), body[1:]); err != nil {
		if errors.Is(err, errSessionEnded) {
			return err
		}
		return k.fail(s, err)
	}
	return nil
}

// fail ends the session on a frame that breaks the protocol, as the
// reader would.
func (k *inSink) fail(s *session, err error) error {
	s.fail(fmt.Errorf("read: %w", err))
	return err
}

// startDirect makes s's outbound frames calls of reg.out and lets reg.in
// deliver inbound ones. What was queued before (while disconnected, or by
// an instance that started emitting before its session) is handed over
// first.
func (g *gateway) startDirect(instCtx context.Context, s *session, reg *registration) {
	ctx, cancel := context.WithCancel(instCtx)
	s.cancel = cancel
	d := &directOut{sink: reg.out, ctx: ctx, s: s}
	// Inbound first: handing the queue over may wait for room (or for
	// back pressure to end) downstream, which needs nothing from here.
	reg.in.s = s
	close(reg.in.started)
	g.dmu.Lock()
	// Set before the queue is emptied: a push that missed it and queued
	// its batch after this drain sees it then and drains again.
	g.direct.Store(d)
	if err := g.drainTo(d); err != nil {
		d.fail(err)
	}
	g.dmu.Unlock()
}

// drainTo hands the outbound queue to d's sink; batches that fail are
// counted lost.
func (g *gateway) drainTo(d *directOut) error {
	var batch []*wire.Batch
	for {
		batch = g.out.PopAll(batch[:0])
		if len(batch) == 0 {
			return nil
		}
		size := 0
		var err error
		for _, b := range batch {
			size += batchSize(b)
			if err == nil {
				err = g.handOver(d, b)
			} else if b.Dest != ctlDest {
				g.stats.TuplesLost.Add(int64(b.Count))
			}
			g.recycle(b)
		}
		clear(batch)
		g.out.Release(size)
		if err != nil {
			return err
		}
	}
}

// stopDirect ends s's direct hand-off (after its context was canceled,
// so that a call blocked in the sink returns): later batches are queued.
func (g *gateway) stopDirect(s *session) {
	g.dmu.Lock()
	if d := g.direct.Load(); d != nil && d.s == s {
		g.direct.Store(nil)
	}
	g.dmu.Unlock()
}

// handOver hands b to the stream manager's sink: a data batch, or a
// whole control frame (ctlDest). The caller holds dmu and recycles b.
func (g *gateway) handOver(d *directOut, b *wire.Batch) error {
	if b.Dest == ctlDest {
		if len(b.Buf) < 5 {
			return fmt.Errorf("%w: control frame of %d bytes", wire.ErrCorrupt, len(b.Buf))
		}
		return d.sink.HandleFrame(d.ctx, b.Buf[4:])
	}
	if err := d.sink.HandleData(d.ctx, b.Dest, b.Count, b.Buf); err != nil {
		g.stats.TuplesLost.Add(int64(b.Count))
		return err
	}
	g.stats.TuplesOut.Add(int64(b.Count))
	return nil
}

// push hands b to the stream manager's sink in a direct session, else
// queues it for the writer. It takes b, and fails when the hand-off or
// the push did (the session ends). It never waits for room in the queue
// holding dmu: startDirect, which empties the queue, needs it.
func (g *gateway) push(ctx context.Context, b *wire.Batch) error {
	g.dmu.Lock()
	if d := g.direct.Load(); d != nil {
		err := g.handOver(d, b)
		g.dmu.Unlock()
		g.recycle(b)
		if err != nil {
			d.fail(err)
			return fmt.Errorf("stream manager: %w", err)
		}
		return nil
	}
	g.dmu.Unlock()
	n := int64(b.Count)
	if b.Dest == ctlDest {
		n = 0
	}
	err := g.out.Push(ctx, b)
	if err == nil {
		if d := g.direct.Load(); d != nil {
			// A direct session started while b waited for room: hand
			// over what is queued, b included.
			g.dmu.Lock()
			err = g.drainTo(d)
			g.dmu.Unlock()
			if err != nil {
				d.fail(err)
				return fmt.Errorf("stream manager: %w", err)
			}
		}
		return nil
	}
	if errors.Is(err, wire.ErrQueueFull) {
		g.stats.TuplesLost.Add(n)
		err = fmt.Errorf("stream manager unreachable and the outbound queue full: %w", err)
	}
	g.recycle(b)
	return err
}

var _ wire.FrameHandler = (*inSink)(nil)
