package memconn

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// DefaultBufferSize is the buffer of each direction when Pipe or
// NewListener get 0.
const DefaultBufferSize = 1 << 20

// Addr is the address of an in-memory connection's end.
type Addr string

// Network is "memory".
func (Addr) Network() string { return "memory" }

func (a Addr) String() string { return string(a) }

// Pipe returns the two ends of a connection whose directions each buffer
// up to size bytes (DefaultBufferSize if size ≤ 0).
func Pipe(size int) (net.Conn, net.Conn) { return pipe(size, "memory", "memory") }

func pipe(size int, a, b Addr) (*Conn, *Conn) {
	if size <= 0 {
		size = DefaultBufferSize
	}
	ab, ba := newRing(size), newRing(size)
	at := new(attachments)
	ca := &Conn{in: ba, out: ab, local: a, remote: b, closed: make(chan struct{}), at: at, side: 0}
	cb := &Conn{in: ab, out: ba, local: b, remote: a, closed: make(chan struct{}), at: at, side: 1}
	ca.rd.init()
	ca.wd.init()
	cb.rd.init()
	cb.wd.init()
	return ca, cb
}

// ring is one direction's bounded buffer.
type ring struct {
	mu       sync.Mutex
	buf      []byte
	start, n int
	// eof: the writing end closed (reads drain, then io.EOF); gone: the
	// reading end closed (writes fail).
	eof, gone bool
	readable  chan struct{} // a token when data or eof arrived
	writable  chan struct{} // a token when space or gone arrived
}

func newRing(size int) *ring {
	return &ring{buf: make([]byte, size), readable: make(chan struct{}, 1), writable: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// read copies buffered bytes into p; ok is false when there were none.
func (r *ring) read(p []byte) (n int, ok bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		if r.eof {
			return 0, true, io.EOF
		}
		return 0, false, nil
	}
	for n < len(p) && r.n > 0 {
		end := r.start + r.n
		if end > len(r.buf) {
			end = len(r.buf)
		}
		c := copy(p[n:], r.buf[r.start:end])
		n += c
		r.n -= c
		r.start += c
		if r.start == len(r.buf) {
			r.start = 0
		}
	}
	if r.n == 0 {
		r.start = 0
	}
	signal(r.writable)
	return n, true, nil
}

// write copies as much of p as fits; it returns how much.
func (r *ring) write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return 0, io.ErrClosedPipe
	}
	n := 0
	for n < len(p) && r.n < len(r.buf) {
		pos := (r.start + r.n) % len(r.buf)
		end := len(r.buf)
		if pos < r.start {
			end = r.start
		}
		c := copy(r.buf[pos:end], p[n:])
		n += c
		r.n += c
	}
	if n > 0 {
		signal(r.readable)
	}
	return n, nil
}

func (r *ring) closeWrite() {
	r.mu.Lock()
	r.eof = true
	r.mu.Unlock()
	signal(r.readable)
}

func (r *ring) closeRead() {
	r.mu.Lock()
	r.gone = true
	r.n, r.start = 0, 0
	r.mu.Unlock()
	signal(r.writable)
}

// Conn is one end of an in-memory connection.
type Conn struct {
	in, out       *ring
	local, remote Addr
	rd, wd        deadline
	readMu        sync.Mutex // one reader and one writer at a time, like a socket's
	writeMu       sync.Mutex
	closeOnce     sync.Once
	closed        chan struct{}
	at            *attachments
	side          int // this end's index in at
}

// attachments are the values the two ends of a pipe attached.
type attachments struct {
	mu   sync.Mutex
	vals [2]any
}

// Attach stores v on this end for the other end's Peer: two ends in one
// process can hand each other objects (a stream manager and an instance
// exchange the handlers they call directly instead of writing frames).
func (c *Conn) Attach(v any) {
	c.at.mu.Lock()
	c.at.vals[c.side] = v
	c.at.mu.Unlock()
}

// Peer returns what the other end attached, nil if nothing.
func (c *Conn) Peer() any {
	c.at.mu.Lock()
	defer c.at.mu.Unlock()
	return c.at.vals[1-c.side]
}

var _ net.Conn = (*Conn)(nil)

// Read reads what the peer wrote, waiting while nothing is buffered.
func (c *Conn) Read(p []byte) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for {
		if c.isClosed() {
			return 0, c.opErr("read", net.ErrClosed)
		}
		if c.rd.expired() {
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		}
		if len(p) == 0 {
			return 0, nil
		}
		n, ok, err := c.in.read(p)
		if ok {
			return n, err
		}
		select {
		case <-c.in.readable:
		case <-c.rd.wait():
		case <-c.closed:
		}
	}
}

// Write writes all of p, waiting while the peer's buffer is full.
func (c *Conn) Write(p []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	done := 0
	for {
		if c.isClosed() {
			return done, c.opErr("write", net.ErrClosed)
		}
		if c.wd.expired() {
			return done, c.opErr("write", os.ErrDeadlineExceeded)
		}
		n, err := c.out.write(p[done:])
		done += n
		if err != nil {
			return done, c.opErr("write", err)
		}
		if done == len(p) {
			return done, nil
		}
		select {
		case <-c.out.writable:
		case <-c.wd.wait():
		case <-c.closed:
		}
	}
}

// Close closes this end: the peer reads what is buffered and then io.EOF,
// and its writes fail.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.out.closeWrite()
		c.in.closeRead()
	})
	return nil
}

func (c *Conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *Conn) opErr(op string, err error) error {
	if err == io.EOF {
		return err
	}
	return &net.OpError{Op: op, Net: "memory", Source: c.local, Addr: c.remote, Err: err}
}

// LocalAddr is this end's address.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.rd.set(t)
	c.wd.set(t)
	return nil
}

// SetReadDeadline sets the deadline of Read calls, pending ones included
// (zero: none).
func (c *Conn) SetReadDeadline(t time.Time) error { c.rd.set(t); return nil }

// SetWriteDeadline sets the deadline of Write calls, pending ones
// included (zero: none).
func (c *Conn) SetWriteDeadline(t time.Time) error { c.wd.set(t); return nil }

// deadline is a settable deadline whose channel is closed when it passes.
type deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	passed chan struct{}
}

func (d *deadline) init() { d.passed = make(chan struct{}) }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.passed // the timer fired: wait until it closed the channel
	}
	d.timer = nil
	closed := isDone(d.passed)
	if t.IsZero() {
		if closed {
			d.passed = make(chan struct{})
		}
		return
	}
	if wait := time.Until(t); wait > 0 {
		if closed {
			d.passed = make(chan struct{})
		}
		ch := d.passed
		d.timer = time.AfterFunc(wait, func() { close(ch) })
		return
	}
	if !closed {
		close(d.passed)
	}
}

func (d *deadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.passed
}

func (d *deadline) expired() bool { return isDone(d.wait()) }

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
