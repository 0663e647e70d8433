package memconn

import (
	"context"
	"net"
	"sync"
)

// Listener is a net.Listener whose connections are made by its Dial: the
// in-process counterpart of a Unix socket.
type Listener struct {
	addr      Addr
	size      int
	conns     chan net.Conn
	closeOnce sync.Once
	closed    chan struct{}
}

var _ net.Listener = (*Listener)(nil)

// NewListener returns a listener named name whose connections buffer size
// bytes per direction (DefaultBufferSize if size ≤ 0).
func NewListener(name string, size int) *Listener {
	return &Listener{addr: Addr(name), size: size, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for the next Dial.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, &net.OpError{Op: "accept", Net: "memory", Addr: l.addr, Err: net.ErrClosed}
	}
}

// Dial connects to the listener; it waits for Accept until ctx ends.
func (l *Listener) Dial(ctx context.Context) (net.Conn, error) {
	client, server := pipe(l.size, Addr(l.addr+"(client)"), l.addr)
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, &net.OpError{Op: "dial", Net: "memory", Addr: l.addr, Err: net.ErrClosed}
	case <-ctx.Done():
		return nil, &net.OpError{Op: "dial", Net: "memory", Addr: l.addr, Err: ctx.Err()}
	}
}

// Close makes Accept and Dial fail; connections made already stay open.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

// Addr is the listener's name.
func (l *Listener) Addr() net.Addr { return l.addr }
