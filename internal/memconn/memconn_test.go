package memconn_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/nettest"

	"github.com/egret-stream/egret/internal/memconn"
)

// The net.Conn conformance suite of golang.org/x/net (concurrent reads and
// writes, deadlines in the past and future, close while blocked, ...), with
// a small buffer so that writes block.
func TestConnConformance(t *testing.T) {
	for _, size := range []int{7, 64 << 10} {
		nettest.TestConn(t, func() (net.Conn, net.Conn, func(), error) {
			a, b := memconn.Pipe(size)
			return a, b, func() { a.Close(); b.Close() }, nil
		})
	}
}

// Bytes arrive in order and complete across a buffer much smaller than the
// writes, and the reader sees io.EOF after the writer closed.
func TestStreamAndEOF(t *testing.T) {
	a, b := memconn.Pipe(1000)
	want := make([]byte, 1<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	go func() {
		for off := 0; off < len(want); off += 3000 {
			end := min(off+3000, len(want))
			if _, err := a.Write(want[off:end]); err != nil {
				t.Error(err)
				return
			}
		}
		a.Close()
	}()
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, not what was written", len(got))
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("write to a closed peer: %v, want io.ErrClosedPipe", err)
	}
}

// A write blocked on a full buffer waits for its deadline and reports a
// timeout; a blocked read wakes on Close.
func TestBlockedWriteDeadlineAndCloseWakesRead(t *testing.T) {
	a, b := memconn.Pipe(4)
	a.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
	n, err := a.Write([]byte("0123456789"))
	var ne net.Error
	if n != 4 || !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write into a full buffer: n=%d err=%v, want 4 bytes and a timeout", n, err)
	}
	buf := make([]byte, 16)
	if n, err := b.Read(buf); n != 4 || err != nil {
		t.Fatalf("first read: %d %v", n, err)
	}
	// The second read blocks (nothing is buffered) until Close, or starts
	// after it: either way it fails with net.ErrClosed.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := b.Read(buf); !errors.Is(err, net.ErrClosed) {
			t.Errorf("read on an end closed while blocked: %v, want net.ErrClosed", err)
		}
	}()
	b.Close()
	wg.Wait()
}

func TestListener(t *testing.T) {
	l := memconn.NewListener("stmgr", 0)
	go func() {
		c, err := l.Accept()
		if err != nil {
			t.Error(err)
			return
		}
		io.Copy(c, c)
		c.Close()
	}()
	c, err := l.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("ping"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo: %q %v", buf, err)
	}
	c.Close()
	l.Close()
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("accept after close: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := memconn.NewListener("x", 0).Dial(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("dial with no accept and a cancelled context: %v", err)
	}
}

// BenchmarkPipe is 64 KiB writes read by another goroutine in 64 KiB reads.
func BenchmarkPipe(b *testing.B) {
	a, c := memconn.Pipe(0)
	buf := make([]byte, 64<<10)
	b.SetBytes(int64(len(buf)))
	go func() {
		rb := make([]byte, 64<<10)
		for {
			if _, err := c.Read(rb); err != nil {
				return
			}
		}
	}()
	for i := 0; i < b.N; i++ {
		a.Write(buf)
	}
	a.Close()
}

// What one end attaches, the other end's Peer returns; an end does not see
// its own attachment.
func TestAttachPeer(t *testing.T) {
	ln := memconn.NewListener("test", 0)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	c, err := ln.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	client, server := c.(*memconn.Conn), s.(*memconn.Conn)
	if client.Peer() != nil || server.Peer() != nil {
		t.Fatal("Peer before any Attach is not nil")
	}
	client.Attach("from client")
	if got := server.Peer(); got != "from client" {
		t.Fatalf("server's Peer = %v, want the client's attachment", got)
	}
	if got := client.Peer(); got != nil {
		t.Fatalf("client's Peer = %v, want nil (only the client attached)", got)
	}
	server.Attach(42)
	if got := client.Peer(); got != 42 {
		t.Fatalf("client's Peer = %v, want 42", got)
	}
}
