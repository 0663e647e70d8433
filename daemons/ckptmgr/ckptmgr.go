package ckptmgr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Config keys the checkpoint manager reads (conf/REFERENCE.md).
const (
	// KeyStorage selects the checkpoint storage.
	KeyStorage = "egret.checkpoint.storage"
	// KeyMaxFrame bounds a frame of the manager's connections, as of
	// every connection of the data plane.
	KeyMaxFrame = "egret.wire.max.frame.bytes"
	// KeyTimeout bounds one storage call.
	KeyTimeout = "egret.checkpoint.timeout"
)

// Defaults of the config keys.
const (
	DefaultStorage  = "localfs"
	DefaultMaxFrame = wire.DefaultMaxFrame
	DefaultTimeout  = 2 * time.Minute
)

// Config configures a checkpoint manager.
type Config struct {
	TopologyName string
	Container    int
	// Socket is the Unix socket to listen on (required); a stale file
	// there is replaced.
	Socket string
	// Storage holds the checkpoints (required). Run does not close it.
	Storage spi.CheckpointStorage
	// MaxFrame bounds a request frame (default DefaultMaxFrame): a larger
	// one closes its connection. A task's state is not bounded by it: its
	// files arrive in chunks of a frame (daemons/ckptio), only its
	// manifest in one frame.
	MaxFrame int
	// Timeout bounds each storage call (default DefaultTimeout); a call
	// that takes longer is answered with an error.
	Timeout time.Duration
	// MetricsSocket is the metrics manager's socket ("": no metrics),
	// published to every MetricsInterval (default 10s).
	MetricsSocket   string
	MetricsInterval time.Duration
	// Ready, when set, is called once the socket listens.
	Ready func()
}

// Stats counts what a checkpoint manager did.
type Stats struct {
	Saves, SaveErrors, SavedBytes             atomic.Int64
	Loads, LoadErrors, LoadNotFound, LoadedBy atomic.Int64
	Cleans, CleanErrors, Deleted              atomic.Int64
	BadConns                                  atomic.Int64
	FilesWritten, FileBytesWritten            atomic.Int64
	FilesRead, FileBytesRead, FileErrors      atomic.Int64
	FilesDeleted, TempsRemoved                atomic.Int64
}

// Metrics returns the counters as metrics.
func (s *Stats) Metrics() []*egretpb.Metric {
	m := func(name string, v *atomic.Int64) *egretpb.Metric {
		return &egretpb.Metric{Name: name, Value: float64(v.Load())}
	}
	return []*egretpb.Metric{
		m("ckptmgr.saves", &s.Saves), m("ckptmgr.save.errors", &s.SaveErrors), m("ckptmgr.saved.bytes", &s.SavedBytes),
		m("ckptmgr.loads", &s.Loads), m("ckptmgr.load.errors", &s.LoadErrors), m("ckptmgr.load.not.found", &s.LoadNotFound),
		m("ckptmgr.loaded.bytes", &s.LoadedBy),
		m("ckptmgr.cleans", &s.Cleans), m("ckptmgr.clean.errors", &s.CleanErrors), m("ckptmgr.deleted.checkpoints", &s.Deleted),
		m("ckptmgr.bad.connections", &s.BadConns),
		m("ckptmgr.files.written", &s.FilesWritten), m("ckptmgr.file.bytes.written", &s.FileBytesWritten),
		m("ckptmgr.files.read", &s.FilesRead), m("ckptmgr.file.bytes.read", &s.FileBytesRead),
		m("ckptmgr.file.errors", &s.FileErrors), m("ckptmgr.files.deleted", &s.FilesDeleted),
		m("ckptmgr.temps.removed", &s.TempsRemoved),
	}
}

// Bounds of the stream manager connections.
const (
	maxConns = 64
	// frameSlack is what a SaveStateRequest frame holds beyond the state.
	frameSlack = 64
)

// Server is a checkpoint manager.
type Server struct {
	cfg   Config
	log   *zap.Logger
	stats Stats

	// lost is set when the storage's plugin process exited: Run stops
	// and returns it, so that the executor starts the manager (and a new
	// plugin) again.
	lost     atomic.Pointer[error]
	stopOnce sync.Once
	stop     context.CancelFunc // ends Run
}

// New checks cfg and returns a server; Run serves it.
func New(cfg Config, log *zap.Logger) (*Server, error) {
	if cfg.Socket == "" {
		return nil, errors.New("ckptmgr: a socket path is required")
	}
	if cfg.Storage == nil {
		return nil, errors.New("ckptmgr: a checkpoint storage is required")
	}
	if cfg.TopologyName == "" {
		return nil, errors.New("ckptmgr: a topology name is required")
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = DefaultMaxFrame
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MetricsInterval <= 0 {
		cfg.MetricsInterval = 10 * time.Second
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Server{cfg: cfg, log: log.With(zap.String("topology", cfg.TopologyName), zap.Int("container", cfg.Container))}, nil
}

// Stats returns the server's counters.
func (s *Server) Stats() *Stats { return &s.stats }

// Run runs a checkpoint manager until ctx ends.
func Run(ctx context.Context, cfg Config, log *zap.Logger) error {
	s, err := New(cfg, log)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// Run listens on the socket and serves connections until ctx ends; it
// returns after every connection is closed.
func (s *Server) Run(ctx context.Context) error {
	_ = os.Remove(s.cfg.Socket)
	ln, err := net.Listen("unix", s.cfg.Socket)
	if err != nil {
		return fmt.Errorf("ckptmgr: listen on %s: %w", s.cfg.Socket, err)
	}
	defer os.Remove(s.cfg.Socket)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.stop = cancel
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wire.PublishMetrics(ctx, s.cfg.MetricsSocket, s.cfg.MetricsInterval, func() *egretpb.MetricsPublish {
			return &egretpb.MetricsPublish{Source: "ckptmgr", Container: int32(s.cfg.Container),
				Metrics: append(s.stats.Metrics(), wire.ProcessMetrics()...)}
		}, s.log)
	}()
	go func() { <-ctx.Done(); ln.Close() }()
	slots := make(chan struct{}, maxConns)
	if s.cfg.Ready != nil {
		s.cfg.Ready()
	}
	s.log.Info("checkpoint manager listening", zap.String("socket", s.cfg.Socket))
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			s.log.Warn("accept failed", zap.Error(err))
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			s.stats.BadConns.Add(1)
			s.log.Error("too many connections; closing the new one", zap.Int("limit", maxConns))
			conn.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			s.serve(ctx, conn)
		}()
	}
	wg.Wait()
	if err := s.lost.Load(); err != nil {
		return *err
	}
	return nil
}

// storageLost stops the manager when err says the storage's plugin
// process is gone: every later call would fail.
func (s *Server) storageLost(err error) {
	if !errors.Is(err, spi.ErrPluginExited) {
		return
	}
	s.stopOnce.Do(func() {
		lost := fmt.Errorf("ckptmgr: the checkpoint storage is gone, stopping: %w", err)
		s.lost.Store(&lost)
		s.log.Error("the checkpoint storage plugin exited; stopping so that the executor starts a new checkpoint manager", zap.Error(err))
	})
}

func (s *Server) serve(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	r := bufio.NewReaderSize(conn, 64<<10)
	w := bufio.NewWriterSize(conn, 64<<10)
	var in, out []byte
	fc := s.newFileConn(w)
	defer fc.close()
	for {
		t, payload, nb, err := wire.ReadFrame(r, in, s.cfg.MaxFrame+frameSlack)
		in = nb
		if err != nil {
			if !isClosed(err) && ctx.Err() == nil {
				s.stats.BadConns.Add(1)
				s.log.Error("closing the connection: unreadable frame", zap.Error(err))
			}
			return
		}
		if wire.IsFileFrame(t) {
			if err := fc.handle(ctx, t, payload); err != nil {
				if !isClosed(err) && ctx.Err() == nil {
					s.stats.BadConns.Add(1)
					s.log.Error("closing the connection", zap.Error(err))
				}
				return
			}
			if s.lost.Load() != nil {
				_ = w.Flush()
				s.stop()
				return
			}
			continue
		}
		resp, err := s.handle(ctx, t, payload)
		if err != nil {
			s.stats.BadConns.Add(1)
			s.log.Error("closing the connection", zap.Error(err))
			return
		}
		if out, err = wire.AppendMessage(out[:0], resp); err != nil {
			s.log.Error("closing the connection: encode the response", zap.Error(err))
			return
		}
		if _, err := w.Write(out); err != nil {
			return
		}
		// Pipelined requests are answered in one write.
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
		if s.lost.Load() != nil {
			// The response that reported the lost storage is out: stop
			// (closing every connection).
			_ = w.Flush()
			s.stop()
			return
		}
		if cap(out) > 1<<20 {
			out = nil // do not hold a large loaded state between requests
		}
	}
}

// handle answers one request; an error means the frame is not a request
// of this protocol, and closes the connection.
func (s *Server) handle(ctx context.Context, t wire.FrameType, payload []byte) (proto.Message, error) {
	switch t {
	case wire.FrameSaveStateRequest, wire.FrameLoadStateRequest, wire.FrameCleanCheckpointsRequest:
	default:
		return nil, fmt.Errorf("unexpected %s frame: a checkpoint manager serves only save, load and clean requests", t)
	}
	m, err := wire.DecodeMessage(t, payload)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	switch req := m.(type) {
	case *egretpb.SaveStateRequest:
		return s.save(ctx, req), nil
	case *egretpb.LoadStateRequest:
		return s.load(ctx, req), nil
	case *egretpb.CleanCheckpointsRequest:
		return s.clean(ctx, req), nil
	}
	return nil, fmt.Errorf("unexpected message %T", m)
}

func (s *Server) key(checkpoint int64, task int32) spi.CheckpointKey {
	return spi.CheckpointKey{Topology: s.cfg.TopologyName, Checkpoint: checkpoint, Task: task}
}

// call runs f, turning a panic of the storage into an error: a broken
// storage must not take the manager down.
func call(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("checkpoint storage panicked: %v", p)
		}
	}()
	return f()
}

func (s *Server) save(ctx context.Context, req *egretpb.SaveStateRequest) *egretpb.SaveStateResponse {
	resp := &egretpb.SaveStateResponse{CheckpointId: req.GetCheckpointId(), TaskId: req.GetTaskId()}
	s.stats.Saves.Add(1)
	key := s.key(req.GetCheckpointId(), req.GetTaskId())
	if err := call(func() error { return s.cfg.Storage.Store(ctx, key, req.GetState()) }); err != nil {
		s.storageLost(err)
		s.stats.SaveErrors.Add(1)
		resp.Error = err.Error()
		s.log.Error("save failed", zap.Int64("checkpoint", key.Checkpoint), zap.Int32("task", key.Task), zap.Error(err))
		return resp
	}
	s.stats.SavedBytes.Add(int64(len(req.GetState())))
	s.log.Debug("saved state", zap.Int64("checkpoint", key.Checkpoint), zap.Int32("task", key.Task), zap.Int("bytes", len(req.GetState())))
	return resp
}

func (s *Server) load(ctx context.Context, req *egretpb.LoadStateRequest) *egretpb.LoadStateResponse {
	resp := &egretpb.LoadStateResponse{CheckpointId: req.GetCheckpointId(), TaskId: req.GetTaskId()}
	s.stats.Loads.Add(1)
	key := s.key(req.GetCheckpointId(), req.GetTaskId())
	var state []byte
	err := call(func() (err error) {
		state, err = s.cfg.Storage.Load(ctx, key)
		return err
	})
	switch {
	case errors.Is(err, spi.ErrNotFound):
		s.stats.LoadNotFound.Add(1)
		resp.NotFound, resp.Error = true, err.Error()
	case err != nil:
		s.storageLost(err)
		s.stats.LoadErrors.Add(1)
		resp.Error = err.Error()
		s.log.Error("load failed", zap.Int64("checkpoint", key.Checkpoint), zap.Int32("task", key.Task), zap.Error(err))
	default:
		s.stats.LoadedBy.Add(int64(len(state)))
		resp.State = state
	}
	return resp
}

func (s *Server) clean(ctx context.Context, req *egretpb.CleanCheckpointsRequest) *egretpb.CleanCheckpointsResponse {
	s.stats.Cleans.Add(1)
	keepFrom, after := req.GetKeepFrom(), req.GetDeleteAfter()
	var ids []int64
	err := call(func() (err error) {
		ids, err = s.cfg.Storage.List(ctx, s.cfg.TopologyName)
		return err
	})
	if err != nil {
		s.storageLost(err)
		s.stats.CleanErrors.Add(1)
		s.log.Error("clean failed", zap.Error(err))
		return &egretpb.CleanCheckpointsResponse{Error: err.Error()}
	}
	var errs []error
	deleted := 0
	for _, id := range ids {
		if id >= keepFrom && (after <= 0 || id <= after) {
			continue
		}
		if err := call(func() error { return s.cfg.Storage.Delete(ctx, s.cfg.TopologyName, id) }); err != nil {
			s.storageLost(err)
			errs = append(errs, err)
			continue
		}
		deleted++
	}
	s.stats.Deleted.Add(int64(deleted))
	var retained []int64
	for _, id := range ids {
		if id >= keepFrom && (after <= 0 || id <= after) {
			retained = append(retained, id)
		}
	}
	if _, err := s.cleanFiles(ctx, keepFrom, after, retained); err != nil {
		errs = append(errs, err)
	}
	if err := s.removeTemps(ctx); err != nil {
		errs = append(errs, err)
	}
	resp := &egretpb.CleanCheckpointsResponse{}
	if err := errors.Join(errs...); err != nil {
		s.stats.CleanErrors.Add(1)
		resp.Error = err.Error()
		s.log.Error("clean failed", zap.Int64("keep_from", keepFrom), zap.Int64("delete_after", after), zap.Error(err))
	}
	s.log.Debug("cleaned checkpoints", zap.Int64("keep_from", keepFrom), zap.Int64("delete_after", after), zap.Int("deleted", deleted))
	return resp
}

// TempAge is how long a temporary entry of the checkpoint storage stays
// untouched before a clean removes it as a crashed writer's: a live writer
// writes every chunk of a file as it arrives, and a state is stored within
// egret.checkpoint.timeout.
const TempAge = 15 * time.Minute

// removeTemps removes the temporary entries crashed writers left in the
// storage (spi.TempRemover; a storage without the capability keeps them).
func (s *Server) removeTemps(ctx context.Context) error {
	tr, ok := s.cfg.Storage.(spi.TempRemover)
	if !ok {
		return nil
	}
	var n int
	err := call(func() (err error) {
		n, err = tr.RemoveTemps(ctx, s.cfg.TopologyName, time.Now().Add(-TempAge))
		return err
	})
	s.stats.TempsRemoved.Add(int64(n))
	if err != nil {
		s.storageLost(err)
		return fmt.Errorf("remove the temporary files crashed writers left: %w", err)
	}
	return nil
}

func isClosed(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.EOF)
}
