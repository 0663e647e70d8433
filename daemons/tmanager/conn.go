package tmanager

import (
	"bufio"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one connection on the server port: a reader (the goroutine of
// server.serveConn) and a writer goroutine draining a bounded queue of
// encoded frames, so that a broadcast never blocks on a slow peer.
type conn struct {
	rwc  io.ReadWriteCloser
	peer string
	out  chan []byte
	done chan struct{}

	closeOnce sync.Once
	reason    atomic.Pointer[string] // why we closed it; nil: not closed by us

	// container is the container this connection registered as a stream
	// manager (0: none). Guarded by manager.mu.
	container int
	// metrics reports whether the peer sent metrics (a metrics manager).
	metrics atomic.Bool
}

// flushMarker, queued after a last frame, makes the writer flush and close.
var flushMarker = []byte(nil)

func newConn(rwc io.ReadWriteCloser, peer string, queue int) *conn {
	return &conn{rwc: rwc, peer: peer, out: make(chan []byte, queue), done: make(chan struct{})}
}

// send queues an encoded frame without blocking. A full queue means the
// peer does not keep up: the connection is closed (a stream manager then
// reconnects, re-registers and receives the current plan).
func (c *conn) send(frame []byte) bool {
	if frame == nil {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.out <- frame:
		return true
	case <-c.done:
		return false
	default:
		c.close("outbound queue full: the peer does not read")
		return false
	}
}

// closeAfterFlush makes the writer write what is queued, then close.
func (c *conn) closeAfterFlush(reason string) {
	c.reason.CompareAndSwap(nil, &reason)
	select {
	case c.out <- flushMarker:
	default:
		c.close(reason)
	}
}

// close closes the connection at once; the first reason is kept.
func (c *conn) close(reason string) {
	c.reason.CompareAndSwap(nil, &reason)
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.rwc.Close()
	})
}

// closedReason returns why we closed the connection, "" if we did not.
func (c *conn) closedReason() string {
	if r := c.reason.Load(); r != nil {
		return *r
	}
	return ""
}

func (c *conn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

type writeDeadliner interface {
	SetWriteDeadline(time.Time) error
}

// writeLoop writes queued frames, flushing whenever the queue is empty,
// until the connection is closed.
func (c *conn) writeLoop(timeout time.Duration) {
	w := bufio.NewWriterSize(c.rwc, 32<<10)
	wd, _ := c.rwc.(writeDeadliner)
	for {
		var f []byte
		select {
		case f = <-c.out:
		case <-c.done:
			return
		}
		if wd != nil {
			_ = wd.SetWriteDeadline(time.Now().Add(timeout))
		}
		if f == nil { // flushMarker
			_ = w.Flush()
			c.close("closed after the last response")
			return
		}
		if _, err := w.Write(f); err != nil {
			c.close("write failed: " + err.Error())
			return
		}
		if len(c.out) == 0 {
			if err := w.Flush(); err != nil {
				c.close("write failed: " + err.Error())
				return
			}
		}
	}
}
