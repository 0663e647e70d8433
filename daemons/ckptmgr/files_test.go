package ckptmgr_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/checkpoints/localfs"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/ckptio"
	"github.com/egret-stream/egret/daemons/ckptmgr"
	"github.com/egret-stream/egret/daemons/wire"
)

// content is n deterministic bytes, produced as they are read.
type content struct {
	rng  *mrand.ChaCha8
	left int64
}

func newContent(seed byte, n int64) *content {
	return &content{rng: mrand.NewChaCha8([32]byte{seed}), left: n}
}

func (c *content) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), c.left)]
	_, _ = c.rng.Read(p)
	c.left -= int64(len(p))
	return len(p), nil
}

func hashOf(r io.Reader) ckptio.Sum {
	d := xxhash.New()
	n, _ := io.Copy(d, r)
	return ckptio.Sum{Size: n, Sum: d.Sum64()}
}

func newClient(t *testing.T, socket string, maxFrame int) *ckptio.Client {
	t.Helper()
	c, err := ckptio.NewClient(socket, ckptio.Options{MaxFrame: maxFrame, IOTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestFileFarAboveTheFrameLimit streams a file 750 times the frame limit
// through the checkpoint manager into localfs and back; the manager's heap
// stays far below the file's size (it writes chunks as they arrive).
func TestFileFarAboveTheFrameLimit(t *testing.T) {
	const frame = 64 << 10
	const size = 48 << 20
	st := newStorage(t)
	sock := socketPath(t, "ckptmgr.sock")
	s := start(t, ckptmgr.Config{Storage: st, Socket: sock, MaxFrame: frame})
	c := newClient(t, sock, frame)
	ctx := t.Context()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak := make(chan uint64)
	stop := make(chan struct{})
	go func() {
		var m runtime.MemStats
		var max uint64
		for {
			select {
			case <-stop:
				peak <- max
				return
			case <-time.After(20 * time.Millisecond):
				runtime.ReadMemStats(&m)
				max = maxOf(max, m.HeapInuse)
			}
		}
	}()
	sum, err := c.Put(ctx, "5-1-keyed", newContent(1, size))
	close(stop)
	grew := int64(<-peak) - int64(before.HeapInuse)
	if err != nil {
		t.Fatal(err)
	}
	if want := hashOf(newContent(1, size)); sum != want {
		t.Fatalf("Put = %+v, want %+v", sum, want)
	}
	if grew > size/4 {
		t.Errorf("the heap grew by %d bytes while a %d-byte file streamed through", grew, size)
	}
	p, _ := st.(*localfs.Storage).FilePath(topo, "5-1-keyed")
	fh, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if got := hashOf(fh); got != sum {
		t.Fatalf("the stored file is %+v, want %+v", got, sum)
	}
	dd := xxhash.New()
	if err := c.Get(ctx, "5-1-keyed", dd, sum); err != nil {
		t.Fatal(err)
	}
	if dd.Sum64() != sum.Sum {
		t.Fatalf("downloaded XXH64 %x, want %x", dd.Sum64(), sum.Sum)
	}
	if n := s.Stats().FileBytesWritten.Load(); n != size {
		t.Errorf("ckptmgr.file.bytes.written = %d", n)
	}
}

func maxOf(a, b uint64) uint64 { return max(a, b) }

// rawConn speaks the protocol frame by frame, as a client that misbehaves.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t *testing.T, sock string) *rawConn {
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(time.Minute))
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (c *rawConn) send(ms ...*ckptio.Msg) {
	var b []byte
	for _, m := range ms {
		b = ckptio.AppendMsg(b, m)
	}
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawConn) recv() ckptio.Msg {
	t, payload, _, err := wire.ReadFrame(c.r, nil, 1<<20)
	if err != nil {
		c.t.Fatal(err)
	}
	var m ckptio.Msg
	if err := ckptio.DecodeMsg(t, payload, &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

func files(t *testing.T, st spi.CheckpointStorage) []spi.FileInfo {
	t.Helper()
	l, err := st.(spi.CheckpointFiles).ListFiles(t.Context(), topo)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestFileUploadFailures: a commit whose size or hash is not what arrived,
// a client that disconnects midway, a file that does not exist: nothing is
// visible, the errors say what happened, the manager keeps serving.
func TestFileUploadFailures(t *testing.T) {
	st := newStorage(t)
	sock := socketPath(t, "ckptmgr.sock")
	s := start(t, ckptmgr.Config{Storage: st, Socket: sock})
	c := dialRaw(t, sock)
	data := []byte("the bytes of a file")
	c.send(&ckptio.Msg{Type: wire.FrameFileCreate, Name: "1-1-x"}, &ckptio.Msg{Type: wire.FrameFileChunk, Data: data},
		&ckptio.Msg{Type: wire.FrameFileCommit, Size: int64(len(data)) + 1, Sum: xxhash.Sum64(data)})
	if m := c.recv(); m.Status != ckptio.StatusFailed || !strings.Contains(m.Error, "received 19 bytes") {
		t.Fatalf("commit with a wrong size = %+v", m)
	}
	c.send(&ckptio.Msg{Type: wire.FrameFileCreate, Name: "1-1-x"}, &ckptio.Msg{Type: wire.FrameFileChunk, Data: data},
		&ckptio.Msg{Type: wire.FrameFileCommit, Size: int64(len(data)), Sum: xxhash.Sum64(data) ^ 1})
	if m := c.recv(); m.Status != ckptio.StatusFailed {
		t.Fatalf("commit with a wrong hash = %+v", m)
	}
	if l := files(t, st); len(l) != 0 {
		t.Fatalf("files after failed commits: %v", l)
	}
	// The same connection still works.
	c.send(&ckptio.Msg{Type: wire.FrameFileCreate, Name: "1-1-x"}, &ckptio.Msg{Type: wire.FrameFileChunk, Data: data},
		&ckptio.Msg{Type: wire.FrameFileCommit, Size: int64(len(data)), Sum: xxhash.Sum64(data)})
	if m := c.recv(); m.Status != ckptio.StatusOK || !slices.Equal(m.Values, []int64{int64(len(data))}) {
		t.Fatalf("commit = %+v", m)
	}
	// A client that dies midway leaves nothing, also no temporary file.
	d := dialRaw(t, sock)
	d.send(&ckptio.Msg{Type: wire.FrameFileCreate, Name: "1-1-y"}, &ckptio.Msg{Type: wire.FrameFileChunk, Data: data})
	root := st.(*localfs.Storage).Root()
	waitFor(t, func() bool {
		e, _ := os.ReadDir(filepath.Join(root, topo, "files"))
		return len(e) == 2
	})
	d.nc.Close()
	waitFor(t, func() bool {
		e, _ := os.ReadDir(filepath.Join(root, topo, "files"))
		return len(e) == 1
	})
	if l := files(t, st); !slices.Equal(l, []spi.FileInfo{{Name: "1-1-x", Size: int64(len(data))}}) {
		t.Fatalf("files = %v", l)
	}
	// A chunk outside an upload closes the connection.
	c.send(&ckptio.Msg{Type: wire.FrameFileChunk, Data: data})
	if _, _, _, err := wire.ReadFrame(c.r, nil, 1<<20); err == nil {
		t.Fatal("a chunk outside an upload was answered")
	}
	cl := newClient(t, sock, 0)
	if err := cl.Get(t.Context(), "1-1-missing", io.Discard, ckptio.Sum{}); !errors.Is(err, ckptio.ErrNotFound) {
		t.Fatalf("Get of a missing file = %v", err)
	}
	if _, err := cl.Manifest(t.Context(), 9, 9); !errors.Is(err, ckptio.ErrNotFound) {
		t.Fatalf("Manifest of a missing checkpoint = %v", err)
	}
	sizes, err := cl.Stat(t.Context(), []string{"1-1-missing", "1-1-x"})
	if err != nil || !slices.Equal(sizes, []int64{-1, int64(len(data))}) {
		t.Fatalf("Stat = %v, %v", sizes, err)
	}
	// A damaged file does not pass as the manifest's.
	p, _ := st.(*localfs.Storage).FilePath(topo, "1-1-x")
	if err := os.WriteFile(p, []byte("the bytes of a fire"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(t.Context(), "1-1-x", io.Discard, ckptio.Sum{Size: int64(len(data)), Sum: xxhash.Sum64(data)}); !errors.Is(err, ckptio.ErrCorrupt) {
		t.Fatalf("Get of a damaged file = %v, want ErrCorrupt", err)
	}
	if s.Stats().FileErrors.Load() < 2 {
		t.Errorf("ckptmgr.file.errors = %d", s.Stats().FileErrors.Load())
	}
}

// TestFilesNeedTheCapability: a storage without files answers with an
// error that says so.
func TestFilesNeedTheCapability(t *testing.T) {
	sock := socketPath(t, "ckptmgr.sock")
	start(t, ckptmgr.Config{Storage: &failing{CheckpointStorage: newStorage(t)}, Socket: sock})
	_, err := newClient(t, sock, 0).Put(t.Context(), "1-1-x", strings.NewReader("x"))
	if err == nil || !strings.Contains(err.Error(), "keeps no files") {
		t.Fatalf("Put into a storage without files = %v", err)
	}
}

// TestManifestRead: a manifest stored by SaveStateRequest reads back.
func TestManifestRead(t *testing.T) {
	st := newStorage(t)
	sock := socketPath(t, "ckptmgr.sock")
	start(t, ckptmgr.Config{Storage: st, Socket: sock})
	m := &ckptio.Manifest{Checkpoint: 4, Task: 2, MaxParallelism: 8, Files: []ckptio.File{{Name: "4-2-operator", Part: ckptio.PartOperator, Size: 3}}}
	b, _ := m.MarshalBinary()
	if r := dial(t, sock).save(4, 2, b); r.GetError() != "" {
		t.Fatal(r.GetError())
	}
	got, err := newClient(t, sock, 0).Manifest(context.Background(), 4, 2)
	if err != nil || got.Files[0] != m.Files[0] {
		t.Fatalf("Manifest = %+v, %v", got, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCleanRemovesStaleTemps: a clean removes the temporary files crashed
// writers left (a file upload, a state store), once older than TempAge,
// and leaves a temporary file still being written.
func TestCleanRemovesStaleTemps(t *testing.T) {
	root := t.TempDir()
	st, err := localfs.New(spi.Config{localfs.KeyRoot: root}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s := start(t, ckptmgr.Config{Storage: st, Container: 1})
	c := dial(t, sockets[s])
	if r := c.save(1, 1, stateOf(1, 1)); r.GetError() != "" {
		t.Fatal(r.GetError())
	}
	old := time.Now().Add(-ckptmgr.TempAge - time.Minute)
	temp := func(dir, name string, mtime time.Time) string {
		p := filepath.Join(root, topo, dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("left by a crashed writer"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := []string{temp("files", ".tmp-1-1-operator-123", old), temp("1", ".tmp-2.state-456", old)}
	fresh := temp("files", ".tmp-1-1-keyed-789", time.Now())
	if r := c.clean(1, 0); r.GetError() != "" {
		t.Fatalf("clean: %s", r.GetError())
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s older than %s not removed by a clean: %v", p, ckptmgr.TempAge, err)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a temporary file being written was removed: %v", err)
	}
	if got := s.Stats().TempsRemoved.Load(); got != 2 {
		t.Errorf("ckptmgr.temps.removed = %d, want 2", got)
	}
	if r := c.load(1, 1); r.GetError() != "" || !bytes.Equal(r.GetState(), stateOf(1, 1)) {
		t.Errorf("the stored state after the clean: %v", r)
	}
}
