// Package httpguard wraps the listener of a daemon's HTTP API so that a
// connection whose first bytes are not an HTTP request line is logged:
// net/http answers such garbage with 400 and closes the connection, but
// reports it nowhere.
package httpguard

import (
	"net"
	"sync"

	"go.uber.org/zap"
)

// Listener returns ln with every accepted connection checked.
func Listener(ln net.Listener, log *zap.Logger) net.Listener {
	return &listener{Listener: ln, log: log}
}

type listener struct {
	net.Listener
	log *zap.Logger
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, log: l.log}, nil
}

type conn struct {
	net.Conn
	log  *zap.Logger
	once sync.Once
}

func (c *conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.once.Do(func() {
			if !LooksLikeHTTP(b[:n]) {
				c.log.Error("not an HTTP request; answering 400 and closing the connection",
					zap.String("peer", c.RemoteAddr().String()), zap.Binary("first_bytes", b[:min(n, 16)]))
			}
		})
	}
	return n, err
}

// LooksLikeHTTP reports whether b starts like an HTTP/1 request line: a
// method of upper-case letters followed by a space.
func LooksLikeHTTP(b []byte) bool {
	for i, ch := range b {
		switch {
		case ch >= 'A' && ch <= 'Z':
		case ch == ' ':
			return i >= 3
		default:
			return false
		}
		if i > 10 {
			return false
		}
	}
	return len(b) > 0 && len(b) <= 10 // a request line cut short by the first read
}
