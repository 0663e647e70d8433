package ckptmgr_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/checkpoints/localfs"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/ckptmgr"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

const topo = "wordcount"

func socketPath(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ckpt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, name)
}

func newStorage(t testing.TB) spi.CheckpointStorage {
	t.Helper()
	st, err := localfs.New(spi.Config{localfs.KeyRoot: t.TempDir()}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// start runs a checkpoint manager until the test ends.
func start(t testing.TB, cfg ckptmgr.Config) *ckptmgr.Server {
	t.Helper()
	return startLog(t, cfg, zaptest.NewLogger(t))
}

func startLog(t testing.TB, cfg ckptmgr.Config, log *zap.Logger) *ckptmgr.Server {
	t.Helper()
	if cfg.Socket == "" {
		cfg.Socket = socketPath(t, "ckptmgr.sock")
	}
	if cfg.TopologyName == "" {
		cfg.TopologyName = topo
	}
	ready := make(chan struct{})
	cfg.Ready = func() { close(ready) }
	s, err := ckptmgr.New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run returned before it was ready: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the checkpoint manager did not get ready")
	}
	sockets[s] = cfg.Socket
	return s
}

var sockets = map[*ckptmgr.Server]string{}

// client is a stream manager's side of the connection.
type client struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	buf  []byte
}

func dial(t *testing.T, socket string) *client {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	return &client{t: t, conn: conn, r: bufio.NewReader(conn)}
}

func (c *client) send(msgs ...proto.Message) {
	c.t.Helper()
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = wire.AppendMessage(b, m); err != nil {
			c.t.Fatal(err)
		}
	}
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) recv() proto.Message {
	c.t.Helper()
	ft, payload, nb, err := wire.ReadFrame(c.r, c.buf, 1<<30)
	c.buf = nb
	if err != nil {
		c.t.Fatalf("read a response: %v", err)
	}
	m, err := wire.DecodeMessage(ft, payload)
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

func (c *client) call(m proto.Message) proto.Message {
	c.t.Helper()
	c.send(m)
	return c.recv()
}

func (c *client) save(ckpt int64, task int32, state []byte) *egretpb.SaveStateResponse {
	c.t.Helper()
	return c.call(&egretpb.SaveStateRequest{CheckpointId: ckpt, TaskId: task, State: state}).(*egretpb.SaveStateResponse)
}

func (c *client) load(ckpt int64, task int32) *egretpb.LoadStateResponse {
	c.t.Helper()
	return c.call(&egretpb.LoadStateRequest{CheckpointId: ckpt, TaskId: task}).(*egretpb.LoadStateResponse)
}

func (c *client) clean(keepFrom, deleteAfter int64) *egretpb.CleanCheckpointsResponse {
	c.t.Helper()
	return c.call(&egretpb.CleanCheckpointsRequest{KeepFrom: keepFrom, DeleteAfter: deleteAfter}).(*egretpb.CleanCheckpointsResponse)
}

// closed waits until the server closes the connection.
func (c *client) closed() {
	c.t.Helper()
	_, err := io.Copy(io.Discard, c.r)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		c.t.Fatalf("the connection was not closed cleanly: %v", err)
	}
}

func stateOf(ckpt int64, task int32) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("c%d/t%d;", ckpt, task)), int(ckpt)*100+int(task))
}

func listIDs(t *testing.T, st spi.CheckpointStorage) []int64 {
	t.Helper()
	ids, err := st.List(context.Background(), topo)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestSaveLoadClean(t *testing.T) {
	st := newStorage(t)
	s := start(t, ckptmgr.Config{Storage: st, Container: 1})
	c := dial(t, sockets[s])
	for ckpt := int64(1); ckpt <= 6; ckpt++ {
		for task := int32(1); task <= 2; task++ {
			resp := c.save(ckpt, task, stateOf(ckpt, task))
			if resp.GetError() != "" || resp.GetCheckpointId() != ckpt || resp.GetTaskId() != task {
				t.Fatalf("save %d/%d = %v", ckpt, task, resp)
			}
		}
	}
	// The state is in the storage under the manager's topology.
	got, err := st.Load(context.Background(), spi.CheckpointKey{Topology: topo, Checkpoint: 3, Task: 2})
	if err != nil || !bytes.Equal(got, stateOf(3, 2)) {
		t.Fatalf("storage holds %d bytes, %v", len(got), err)
	}
	resp := c.load(4, 1)
	if resp.GetError() != "" || resp.GetNotFound() || !bytes.Equal(resp.GetState(), stateOf(4, 1)) || resp.GetCheckpointId() != 4 || resp.GetTaskId() != 1 {
		t.Fatalf("load 4/1 = error %q, not_found %v, %d bytes", resp.GetError(), resp.GetNotFound(), len(resp.GetState()))
	}
	resp = c.load(4, 9)
	if !resp.GetNotFound() || len(resp.GetState()) != 0 || resp.GetTaskId() != 9 {
		t.Fatalf("load of a missing task = %v, want not_found", resp)
	}
	if r := c.clean(3, 0); r.GetError() != "" {
		t.Fatalf("clean: %s", r.GetError())
	}
	if ids := listIDs(t, st); !slices.Equal(ids, []int64{3, 4, 5, 6}) {
		t.Fatalf("after clean(keep_from 3) = %v, want [3 4 5 6]", ids)
	}
	if r := c.clean(3, 4); r.GetError() != "" {
		t.Fatalf("clean: %s", r.GetError())
	}
	if ids := listIDs(t, st); !slices.Equal(ids, []int64{3, 4}) {
		t.Fatalf("after clean(keep_from 3, delete_after 4) = %v, want [3 4]", ids)
	}
	if r := c.load(5, 1); !r.GetNotFound() {
		t.Fatalf("load of a cleaned checkpoint = %v, want not_found", r)
	}
	st2 := s.Stats()
	if st2.Saves.Load() != 12 || st2.Loads.Load() != 3 || st2.LoadNotFound.Load() != 2 || st2.Deleted.Load() != 4 || st2.Cleans.Load() != 2 {
		t.Errorf("stats: saves %d loads %d not found %d deleted %d cleans %d", st2.Saves.Load(), st2.Loads.Load(), st2.LoadNotFound.Load(), st2.Deleted.Load(), st2.Cleans.Load())
	}
	if want := int64(0); st2.SaveErrors.Load() != want || st2.BadConns.Load() != want {
		t.Errorf("errors counted on a healthy run: save errors %d, bad connections %d", st2.SaveErrors.Load(), st2.BadConns.Load())
	}
}

// TestPipelined: requests sent at once are answered in order.
func TestPipelined(t *testing.T) {
	s := start(t, ckptmgr.Config{Storage: newStorage(t)})
	c := dial(t, sockets[s])
	var reqs []proto.Message
	for task := int32(0); task < 50; task++ {
		reqs = append(reqs, &egretpb.SaveStateRequest{CheckpointId: 7, TaskId: task, State: stateOf(7, task)},
			&egretpb.LoadStateRequest{CheckpointId: 7, TaskId: task})
	}
	var frames []byte
	for _, m := range reqs {
		var err error
		if frames, err = wire.AppendMessage(frames, m); err != nil {
			t.Fatal(err)
		}
	}
	written := make(chan error, 1)
	go func() {
		_, err := c.conn.Write(frames) // all at once, while responses are read
		written <- err
	}()
	defer func() {
		if err := <-written; err != nil {
			t.Errorf("write the requests: %v", err)
		}
	}()
	for task := int32(0); task < 50; task++ {
		sr, ok := c.recv().(*egretpb.SaveStateResponse)
		if !ok || sr.GetTaskId() != task || sr.GetError() != "" {
			t.Fatalf("response %d: %v", 2*task, sr)
		}
		lr, ok := c.recv().(*egretpb.LoadStateResponse)
		if !ok || lr.GetTaskId() != task || !bytes.Equal(lr.GetState(), stateOf(7, task)) {
			t.Fatalf("response %d: task %d, %d bytes", 2*task+1, lr.GetTaskId(), len(lr.GetState()))
		}
	}
}

// failing wraps a storage; its failures are switched on and off by the
// test.
type failing struct {
	spi.CheckpointStorage
	store, load, list, del atomic.Pointer[error]
	panicOnStore           atomic.Bool
}

func fail(p *atomic.Pointer[error]) error {
	if e := p.Load(); e != nil {
		return *e
	}
	return nil
}

func set(p *atomic.Pointer[error], err error) {
	if err == nil {
		p.Store(nil)
		return
	}
	p.Store(&err)
}

func (f *failing) Store(ctx context.Context, key spi.CheckpointKey, b []byte) error {
	if f.panicOnStore.Load() {
		panic("storage bug")
	}
	if err := fail(&f.store); err != nil {
		return fmt.Errorf("write %d.state: %w", key.Task, err)
	}
	return f.CheckpointStorage.Store(ctx, key, b)
}

func (f *failing) Load(ctx context.Context, key spi.CheckpointKey) ([]byte, error) {
	if err := fail(&f.load); err != nil {
		return nil, fmt.Errorf("read %d.state: %w", key.Task, err)
	}
	return f.CheckpointStorage.Load(ctx, key)
}

func (f *failing) List(ctx context.Context, topology string) ([]int64, error) {
	if err := fail(&f.list); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	return f.CheckpointStorage.List(ctx, topology)
}

func (f *failing) Delete(ctx context.Context, topology string, id int64) error {
	if err := fail(&f.del); err != nil && id%2 == 0 {
		return fmt.Errorf("delete %d: %w", id, err)
	}
	return f.CheckpointStorage.Delete(ctx, topology, id)
}

// TestStorageFailures: a full disk, a permission denied or a broken
// storage gives an error response; the manager keeps serving, on the same
// connection.
func TestStorageFailures(t *testing.T) {
	st := &failing{CheckpointStorage: newStorage(t)}
	s := start(t, ckptmgr.Config{Storage: st})
	c := dial(t, sockets[s])
	if r := c.save(1, 1, []byte("ok")); r.GetError() != "" {
		t.Fatal(r.GetError())
	}

	set(&st.store, syscall.ENOSPC)
	r := c.save(2, 1, []byte("lost"))
	if !strings.Contains(r.GetError(), "no space left on device") || r.GetCheckpointId() != 2 || r.GetTaskId() != 1 {
		t.Fatalf("save on a full disk = %v, want the error in the response", r)
	}
	set(&st.store, syscall.EACCES)
	if r := c.save(2, 2, []byte("lost")); !strings.Contains(r.GetError(), "permission denied") {
		t.Fatalf("save without permission = %v", r)
	}
	set(&st.store, nil)
	st.panicOnStore.Store(true)
	if r := c.save(2, 3, []byte("lost")); !strings.Contains(r.GetError(), "panicked: storage bug") {
		t.Fatalf("save into a panicking storage = %v", r)
	}
	st.panicOnStore.Store(false)
	if r := c.save(2, 1, []byte("now")); r.GetError() != "" {
		t.Fatalf("save after the disk has room again: %s", r.GetError())
	}

	set(&st.load, syscall.EACCES)
	if r := c.load(1, 1); !strings.Contains(r.GetError(), "permission denied") || r.GetNotFound() || len(r.GetState()) != 0 {
		t.Fatalf("load without permission = %v", r)
	}
	set(&st.load, nil)
	if r := c.load(1, 1); string(r.GetState()) != "ok" {
		t.Fatalf("load after permission is back = %v", r)
	}

	set(&st.list, errors.New("NameNode unreachable"))
	if r := c.clean(5, 0); !strings.Contains(r.GetError(), "NameNode unreachable") {
		t.Fatalf("clean with a failing List = %v", r)
	}
	set(&st.list, nil)
	// A failed Delete is reported; the other checkpoints are still deleted.
	for id := int64(3); id <= 6; id++ {
		c.save(id, 1, []byte("x"))
	}
	set(&st.del, syscall.EIO)
	if r := c.clean(6, 0); !strings.Contains(r.GetError(), "delete 2: input/output error") || !strings.Contains(r.GetError(), "delete 4") {
		t.Fatalf("clean with failing Deletes = %v", r)
	}
	if ids := listIDs(t, st); !slices.Equal(ids, []int64{2, 4, 6}) {
		t.Fatalf("after a partly failed clean: %v, want [2 4 6]", ids)
	}
	stats := s.Stats()
	if stats.SaveErrors.Load() != 3 || stats.LoadErrors.Load() != 1 || stats.CleanErrors.Load() != 2 || stats.BadConns.Load() != 0 {
		t.Errorf("stats: save errors %d, load errors %d, clean errors %d, bad connections %d",
			stats.SaveErrors.Load(), stats.LoadErrors.Load(), stats.CleanErrors.Load(), stats.BadConns.Load())
	}
}

// TestRealPermissionDenied: the localfs storage in a directory the
// manager may not write.
func TestRealPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions (TestStorageFailures covers the error path)")
	}
	root := t.TempDir()
	if err := os.Chmod(root, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(root, 0o755) })
	st, err := localfs.New(spi.Config{localfs.KeyRoot: root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, ckptmgr.Config{Storage: st})
	c := dial(t, sockets[s])
	if r := c.save(1, 1, []byte("x")); !strings.Contains(r.GetError(), "permission denied") {
		t.Fatalf("save = %v, want permission denied", r)
	}
	if r := c.load(1, 1); !r.GetNotFound() {
		t.Fatalf("load after a failed save = %v", r)
	}
}

// TestBadFrameClosesOnlyThatConnection: garbage, a frame of another
// protocol, an undecodable message or a frame above the limit closes the
// connection that sent it; other connections are served.
func TestBadFrameClosesOnlyThatConnection(t *testing.T) {
	st := newStorage(t)
	s := start(t, ckptmgr.Config{Storage: st, MaxFrame: 1 << 20})
	good := dial(t, sockets[s])
	if r := good.save(1, 1, []byte("before")); r.GetError() != "" {
		t.Fatal(r.GetError())
	}
	resp, _ := wire.AppendMessage(nil, &egretpb.SaveStateResponse{CheckpointId: 1})
	for name, frame := range map[string][]byte{
		"garbage":         []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"empty frame":     {0, 0, 0, 0},
		"unknown type":    wire.AppendFrame(nil, 250, []byte("x")),
		"a response":      resp,
		"a data frame":    wire.AppendFrame(nil, wire.FrameData, make([]byte, 8)),
		"undecodable":     wire.AppendFrame(nil, wire.FrameSaveStateRequest, []byte{0xff, 0xff, 0xff}),
		"above the limit": wire.AppendFrame(nil, wire.FrameSaveStateRequest, make([]byte, 2<<20)),
	} {
		t.Run(name, func(t *testing.T) {
			bad := dial(t, sockets[s])
			before := s.Stats().BadConns.Load()
			// The server may close before it read everything (the frame
			// above the limit): the write then fails, which is fine.
			_, _ = bad.conn.Write(frame)
			bad.closed()
			if s.Stats().BadConns.Load() != before+1 {
				t.Errorf("bad connections %d, want %d", s.Stats().BadConns.Load(), before+1)
			}
			if r := good.load(1, 1); string(r.GetState()) != "before" {
				t.Fatalf("the good connection after %s: %v", name, r)
			}
		})
	}
	// A new connection is served too.
	if r := dial(t, sockets[s]).save(2, 1, []byte("after")); r.GetError() != "" {
		t.Fatal(r.GetError())
	}
}

// TestLargeState: states up to the limit pass (above wire's 16 MiB default
// frame limit).
func TestLargeState(t *testing.T) {
	s := start(t, ckptmgr.Config{Storage: newStorage(t), MaxFrame: 20 << 20})
	c := dial(t, sockets[s])
	big := bytes.Repeat([]byte("0123456789abcdef"), 18<<20/16)
	if r := c.save(1, 1, big); r.GetError() != "" {
		t.Fatal(r.GetError())
	}
	if r := c.load(1, 1); !bytes.Equal(r.GetState(), big) {
		t.Fatalf("loaded %d bytes, want %d", len(r.GetState()), len(big))
	}
}

// TestConcurrentConnections: connections are served at the same time.
func TestConcurrentConnections(t *testing.T) {
	st := newStorage(t)
	s := start(t, ckptmgr.Config{Storage: st})
	var wg sync.WaitGroup
	for task := int32(1); task <= 8; task++ {
		c := dial(t, sockets[s])
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ckpt := int64(1); ckpt <= 5; ckpt++ {
				c.send(&egretpb.SaveStateRequest{CheckpointId: ckpt, TaskId: task, State: stateOf(ckpt, task)})
				if ft, _, _, err := wire.ReadFrame(c.r, nil, 1<<20); err != nil || ft != wire.FrameSaveStateResponse {
					t.Errorf("task %d: %v %v", task, ft, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for task := int32(1); task <= 8; task++ {
		got, err := st.Load(context.Background(), spi.CheckpointKey{Topology: topo, Checkpoint: 5, Task: task})
		if err != nil || !bytes.Equal(got, stateOf(5, task)) {
			t.Fatalf("task %d: %d bytes, %v", task, len(got), err)
		}
	}
}

// TestMetrics: the counters reach the metrics manager's socket.
func TestMetrics(t *testing.T) {
	msock := socketPath(t, "metricsmgr.sock")
	ln, err := net.Listen("unix", msock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := start(t, ckptmgr.Config{Storage: newStorage(t), Container: 3, MetricsSocket: msock, MetricsInterval: 20 * time.Millisecond})
	c := dial(t, sockets[s])
	c.save(1, 1, []byte("12345"))
	c.load(1, 2)
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(conn)
	for {
		ft, payload, _, err := wire.ReadFrame(r, nil, 1<<20)
		if err != nil {
			t.Fatalf("no ckptmgr metrics: %v", err)
		}
		m, err := wire.DecodeMessage(ft, payload)
		if err != nil {
			t.Fatal(err)
		}
		mp := m.(*egretpb.MetricsPublish)
		got := map[string]float64{}
		for _, x := range mp.GetMetrics() {
			got[x.GetName()] = x.GetValue()
		}
		if mp.GetSource() != "ckptmgr" || mp.GetContainer() != 3 {
			t.Fatalf("published source %q container %d", mp.GetSource(), mp.GetContainer())
		}
		if got["ckptmgr.saves"] == 1 && got["ckptmgr.saved.bytes"] == 5 && got["ckptmgr.load.not.found"] == 1 {
			if _, ok := got["process.rss.bytes"]; !ok {
				t.Logf("process metrics published: %v", mp.GetMetrics())
			}
			return
		}
	}
}

// TestRunStops: Run returns when its context ends and removes its socket;
// a stale socket file is replaced.
func TestRunStops(t *testing.T) {
	sock := socketPath(t, "ckptmgr.sock")
	if err := os.WriteFile(sock, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ckptmgr.Run(ctx, ckptmgr.Config{TopologyName: topo, Socket: sock, Storage: newStorage(t), Ready: func() { close(ready) }}, zaptest.NewLogger(t))
	}()
	<-ready
	c := dial(t, sock)
	c.save(1, 1, []byte("x"))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket after Run: %v", err)
	}
	c.closed()
}

func TestConfigErrors(t *testing.T) {
	st := newStorage(t)
	for name, cfg := range map[string]ckptmgr.Config{
		"no socket":   {TopologyName: topo, Storage: st},
		"no storage":  {TopologyName: topo, Socket: "/tmp/x.sock"},
		"no topology": {Socket: "/tmp/x.sock", Storage: st},
	} {
		if _, err := ckptmgr.New(cfg, nil); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

// blocking is a storage whose Store blocks until its context ends.
type blocking struct{ spi.CheckpointStorage }

func (blocking) Store(ctx context.Context, _ spi.CheckpointKey, _ []byte) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestTimeout: a storage call slower than Config.Timeout is answered with
// an error, and the next request is served.
func TestTimeout(t *testing.T) {
	s := start(t, ckptmgr.Config{Storage: blocking{newStorage(t)}, Timeout: 50 * time.Millisecond})
	c := dial(t, sockets[s])
	r := c.save(1, 1, []byte("x"))
	if !strings.Contains(r.GetError(), context.DeadlineExceeded.Error()) {
		t.Fatalf("save into a storage that hangs = %v, want a deadline error", r)
	}
	if r := c.load(1, 1); !r.GetNotFound() {
		t.Fatalf("load after a timed-out save = %v", r)
	}
}

// gone is a storage whose plugin process exited.
type gone struct{ spi.CheckpointStorage }

func (gone) Store(context.Context, spi.CheckpointKey, []byte) error {
	return fmt.Errorf("checkpointstorage plugin \"disk\" (pid 1): %w; its log above says why", spi.ErrPluginExited)
}

// TestStorageLost: when the storage's plugin process is gone, the request
// that found it is answered, and Run stops with an error (the executor
// then starts a new manager and plugin).
func TestStorageLost(t *testing.T) {
	sock := socketPath(t, "ckptmgr.sock")
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- ckptmgr.Run(context.Background(), ckptmgr.Config{TopologyName: topo, Socket: sock, Storage: gone{newStorage(t)},
			Ready: func() { close(ready) }}, zaptest.NewLogger(t))
	}()
	<-ready
	other := dial(t, sock)
	c := dial(t, sock)
	if r := c.save(1, 1, []byte("x")); !strings.Contains(r.GetError(), "plugin exited") {
		t.Fatalf("save = %v, want the plugin's exit in the response", r)
	}
	select {
	case err := <-done:
		if !errors.Is(err, spi.ErrPluginExited) {
			t.Fatalf("Run = %v, want an error wrapping ErrPluginExited", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop after its storage was lost")
	}
	other.closed()
}
