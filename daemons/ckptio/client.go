package ckptio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/egret-stream/egret/daemons/wire"
)

// ErrNotFound is wrapped by the errors of files and manifests that do not
// exist.
var ErrNotFound = errors.New("not found")

// ChunkSize is the most file bytes one chunk frame carries.
const ChunkSize = 1 << 20

// Client talks to a checkpoint manager over its Unix socket. It is safe for
// concurrent use: each call takes a connection of its own (kept for reuse
// afterwards), so that files move in parallel.
type Client struct {
	socket   string
	maxFrame int
	chunk    int
	timeout  time.Duration

	mu   sync.Mutex
	idle []*conn
}

// Options configure a client.
type Options struct {
	// MaxFrame bounds the frames read and written (wire.DefaultMaxFrame
	// when 0); chunks are smaller than both it and ChunkSize.
	MaxFrame int
	// IOTimeout bounds each read or write on a connection: a checkpoint
	// manager that stops answering fails the call (default 2m).
	IOTimeout time.Duration
}

// NewClient returns a client of the checkpoint manager listening on socket.
func NewClient(socket string, o Options) (*Client, error) {
	if socket == "" {
		return nil, errors.New("ckptio: no checkpoint manager socket (the executor passes --ckptmgr-socket to effectively-once containers)")
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = wire.DefaultMaxFrame
	}
	if o.IOTimeout <= 0 {
		o.IOTimeout = 2 * time.Minute
	}
	chunk := min(ChunkSize, o.MaxFrame-64)
	if chunk < 4096 {
		return nil, fmt.Errorf("ckptio: a frame limit of %d bytes is too small for file chunks", o.MaxFrame)
	}
	return &Client{socket: socket, maxFrame: o.MaxFrame, chunk: chunk, timeout: o.IOTimeout}, nil
}

// Close closes the idle connections.
func (c *Client) Close() error {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	for _, cn := range idle {
		cn.nc.Close()
	}
	return nil
}

type conn struct {
	c    *Client
	nc   net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	out  []byte
	in   []byte
	msg  Msg
	stop func() bool

	// mu orders the deadlines set per read and write with the one
	// that cancels the call when its context ends.
	mu        sync.Mutex
	cancelled bool
}

// watch makes the end of ctx fail the connection's reads and writes.
func (cn *conn) watch(ctx context.Context) {
	cn.cancelled = false
	cn.stop = context.AfterFunc(ctx, func() {
		cn.mu.Lock()
		defer cn.mu.Unlock()
		cn.cancelled = true
		_ = cn.nc.SetDeadline(time.Unix(1, 0))
	})
}

// deadline bounds the next read or write.
func (cn *conn) deadline(set func(time.Time) error) error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.cancelled {
		return fmt.Errorf("ckptio: %w", context.Canceled)
	}
	return set(time.Now().Add(cn.c.timeout))
}

const maxIdle = 8

func (c *Client) get(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		cn := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		cn.watch(ctx)
		return cn, nil
	}
	c.mu.Unlock()
	d := net.Dialer{Timeout: 10 * time.Second}
	nc, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		return nil, fmt.Errorf("ckptio: connect to the checkpoint manager at %s: %w", c.socket, err)
	}
	cn := &conn{c: c, nc: nc, r: bufio.NewReaderSize(nc, 256<<10), w: bufio.NewWriterSize(nc, 256<<10)}
	cn.watch(ctx)
	return cn, nil
}

// put returns a connection after a call: reused when the call ended
// cleanly, closed otherwise.
func (c *Client) put(cn *conn, ok bool) {
	if !cn.stop() || !ok {
		cn.nc.Close()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.idle) >= maxIdle {
		cn.nc.Close()
		return
	}
	c.idle = append(c.idle, cn)
}

func (cn *conn) send(m *Msg, flush bool) error {
	if err := cn.deadline(cn.nc.SetWriteDeadline); err != nil {
		return err
	}
	cn.out = AppendMsg(cn.out[:0], m)
	if _, err := cn.w.Write(cn.out); err != nil {
		return fmt.Errorf("ckptio: send to the checkpoint manager: %w", err)
	}
	if flush {
		if err := cn.w.Flush(); err != nil {
			return fmt.Errorf("ckptio: send to the checkpoint manager: %w", err)
		}
	}
	return nil
}

// recv reads the next message into cn.msg.
func (cn *conn) recv() (*Msg, error) {
	if err := cn.deadline(cn.nc.SetReadDeadline); err != nil {
		return nil, err
	}
	t, payload, buf, err := wire.ReadFrame(cn.r, cn.in, cn.c.maxFrame)
	cn.in = buf
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("ckptio: read from the checkpoint manager: %w", err)
	}
	if err := DecodeMsg(t, payload, &cn.msg); err != nil {
		return nil, err
	}
	return &cn.msg, nil
}

// result reads a Result.
func (cn *conn) result(what string) (*Msg, error) {
	m, err := cn.recv()
	if err != nil {
		return nil, err
	}
	if m.Type != wire.FrameFileResult {
		return nil, fmt.Errorf("ckptio: %w: %s answered with a %s frame", ErrCorrupt, what, m.Type)
	}
	return m, resultErr(m, what)
}

func resultErr(m *Msg, what string) error {
	switch m.Status {
	case StatusOK:
		return nil
	case StatusNotFound:
		return fmt.Errorf("ckptio: %s: %s: %w", what, m.Error, ErrNotFound)
	}
	return fmt.Errorf("ckptio: %s: %s", what, m.Error)
}

// Sum is what a file's bytes are: their count and XXH64.
type Sum struct {
	Size int64
	Sum  uint64
}

// Upload is a file being written through the checkpoint manager into the
// storage; it is an io.Writer that sends chunks as they fill. Exactly one
// of Commit and Abort ends it.
type Upload struct {
	c    *Client
	cn   *conn
	name string
	buf  []byte
	d    *xxhash.Digest
	n    int64
	err  error
	done bool
}

// Create starts writing the file name into the checkpoint storage.
func (c *Client) Create(ctx context.Context, name string) (*Upload, error) {
	cn, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	u := &Upload{c: c, cn: cn, name: name, buf: make([]byte, 0, c.chunk), d: xxhash.New()}
	if err := cn.send(&Msg{Type: wire.FrameFileCreate, Name: name}, false); err != nil {
		c.put(cn, false)
		return nil, err
	}
	return u, nil
}

// Write buffers p, sending every full chunk.
func (u *Upload) Write(p []byte) (int, error) {
	if u.done {
		return 0, fmt.Errorf("ckptio: write of %s after its commit or abort", u.name)
	}
	if u.err != nil {
		return 0, u.err
	}
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), cap(u.buf)-len(u.buf))
		u.buf = append(u.buf, p[:k]...)
		p = p[k:]
		if len(u.buf) == cap(u.buf) {
			if err := u.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

func (u *Upload) flush() error {
	if len(u.buf) == 0 {
		return nil
	}
	_, _ = u.d.Write(u.buf)
	u.n += int64(len(u.buf))
	if err := u.cn.send(&Msg{Type: wire.FrameFileChunk, Data: u.buf}, false); err != nil {
		u.err = err
		return err
	}
	u.buf = u.buf[:0]
	return nil
}

// Commit sends what is buffered and commits the file; the checkpoint
// manager checks that it received Size bytes hashing to Sum.
func (u *Upload) Commit() (Sum, error) {
	if u.done {
		return Sum{}, fmt.Errorf("ckptio: commit of %s after its commit or abort", u.name)
	}
	u.done = true
	err := u.flush()
	s := Sum{Size: u.n, Sum: u.d.Sum64()}
	if err == nil {
		err = u.cn.send(&Msg{Type: wire.FrameFileCommit, Size: s.Size, Sum: s.Sum}, true)
	}
	if err == nil {
		_, err = u.cn.result("commit of " + u.name)
		u.c.put(u.cn, err == nil || !isTransport(err))
		return s, err
	}
	u.c.put(u.cn, false)
	return s, err
}

// Abort drops the file: the connection is closed, and the checkpoint
// manager aborts what it wrote.
func (u *Upload) Abort() {
	if !u.done {
		u.done = true
		u.c.put(u.cn, false)
	}
}

// isTransport reports whether err broke the connection (as opposed to an
// answer of the checkpoint manager).
func isTransport(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrCorrupt) || errors.Is(err, net.ErrClosed)
}

// Put uploads what r holds as the file name.
func (c *Client) Put(ctx context.Context, name string, r io.Reader) (Sum, error) {
	u, err := c.Create(ctx, name)
	if err != nil {
		return Sum{}, err
	}
	if _, err := io.Copy(u, r); err != nil {
		u.Abort()
		return Sum{}, fmt.Errorf("ckptio: upload of %s: %w", name, err)
	}
	return u.Commit()
}

// Download is a file being read from the checkpoint storage.
type Download struct {
	c    *Client
	cn   *conn
	what string
	size int64
	left int64
	d    *xxhash.Digest
	rest []byte
	err  error
}

// Open starts reading the file name.
func (c *Client) Open(ctx context.Context, name string) (*Download, error) {
	return c.open(ctx, &Msg{Type: wire.FrameFileOpen, Name: name}, "read of "+name)
}

func (c *Client) open(ctx context.Context, req *Msg, what string) (*Download, error) {
	cn, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	if err := cn.send(req, true); err != nil {
		c.put(cn, false)
		return nil, err
	}
	m, err := cn.result(what)
	if err != nil {
		c.put(cn, !isTransport(err))
		return nil, err
	}
	if len(m.Values) != 1 || m.Values[0] < 0 {
		c.put(cn, false)
		return nil, fmt.Errorf("ckptio: %s: %w: the answer holds no size", what, ErrCorrupt)
	}
	return &Download{c: c, cn: cn, what: what, size: m.Values[0], left: m.Values[0], d: xxhash.New()}, nil
}

// Size is the file's size.
func (d *Download) Size() int64 { return d.size }

// Read reads the file's bytes; at the end it checks the closing result.
func (d *Download) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	for len(d.rest) == 0 {
		if d.left == 0 {
			_, err := d.cn.result(d.what)
			if err == nil {
				err = io.EOF
			}
			d.finish(err)
			return 0, d.err
		}
		m, err := d.cn.recv()
		if err != nil {
			d.finish(err)
			return 0, err
		}
		if m.Type == wire.FrameFileResult {
			err := resultErr(m, d.what)
			if err == nil {
				err = fmt.Errorf("ckptio: %s: %w: the file ended %d bytes early", d.what, ErrCorrupt, d.left)
			}
			d.finish(err)
			return 0, err
		}
		if m.Type != wire.FrameFileChunk || int64(len(m.Data)) > d.left {
			d.finish(fmt.Errorf("ckptio: %s: %w: unexpected %s frame of %d bytes with %d left", d.what, ErrCorrupt, m.Type, len(m.Data), d.left))
			return 0, d.err
		}
		d.rest = m.Data
		d.left -= int64(len(m.Data))
		_, _ = d.d.Write(m.Data)
	}
	n := copy(p, d.rest)
	d.rest = d.rest[n:]
	return n, nil
}

// Sum returns the count and hash of the bytes read so far.
func (d *Download) Sum() Sum {
	return Sum{Size: d.size - d.left - int64(len(d.rest)), Sum: d.d.Sum64()}
}

func (d *Download) finish(err error) {
	if d.cn != nil {
		d.c.put(d.cn, errors.Is(err, io.EOF))
		d.cn = nil
	}
	d.err = err
}

// Close ends the download; a download not read to its end closes its
// connection.
func (d *Download) Close() error {
	if d.err == nil {
		d.finish(fmt.Errorf("ckptio: %s: read after Close", d.what))
	}
	return nil
}

// Get reads the file name whole, checking it against want (skipped when
// want is zero).
func (c *Client) Get(ctx context.Context, name string, w io.Writer, want Sum) error {
	d, err := c.Open(ctx, name)
	if err != nil {
		return err
	}
	defer d.Close()
	if want != (Sum{}) && d.Size() != want.Size {
		return fmt.Errorf("ckptio: file %s: %w: %d bytes stored, the manifest says %d", name, ErrCorrupt, d.Size(), want.Size)
	}
	if _, err := io.Copy(w, d); err != nil {
		return fmt.Errorf("ckptio: download of %s: %w", name, err)
	}
	if got := d.Sum(); want != (Sum{}) && got != want {
		return fmt.Errorf("ckptio: file %s: %w: XXH64 %016x, the manifest says %016x", name, ErrCorrupt, got.Sum, want.Sum)
	}
	return nil
}

// Stat returns the size of each named file, -1 for one that does not exist.
func (c *Client) Stat(ctx context.Context, names []string) ([]int64, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out := make([]int64, 0, len(names))
	for len(names) > 0 {
		batch := names[:min(len(names), maxStatNames)]
		names = names[len(batch):]
		cn, err := c.get(ctx)
		if err != nil {
			return nil, err
		}
		if err := cn.send(&Msg{Type: wire.FrameFileStat, Names: batch}, true); err != nil {
			c.put(cn, false)
			return nil, err
		}
		m, err := cn.result("stat")
		if err == nil && len(m.Values) != len(batch) {
			err = fmt.Errorf("ckptio: stat: %w: %d sizes for %d names", ErrCorrupt, len(m.Values), len(batch))
		}
		if err != nil {
			c.put(cn, false)
			return nil, err
		}
		out = append(out, m.Values...)
		c.put(cn, true)
	}
	return out, nil
}

// Manifest reads the stored manifest of a task's checkpoint; a checkpoint
// the task has none of gives an error wrapping ErrNotFound.
func (c *Client) Manifest(ctx context.Context, checkpoint int64, task int32) (*Manifest, error) {
	what := fmt.Sprintf("manifest of checkpoint %d task %d", checkpoint, task)
	d, err := c.open(ctx, &Msg{Type: wire.FrameFileManifest, Checkpoint: checkpoint, Task: task}, what)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if d.Size() > 1<<30 {
		return nil, fmt.Errorf("ckptio: %s: %w: %d bytes", what, ErrCorrupt, d.Size())
	}
	b, err := io.ReadAll(d)
	if err != nil {
		return nil, err
	}
	return UnmarshalManifest(b)
}
