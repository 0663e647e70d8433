package tmanager

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// server serves the framed TCP port: stream managers register and
// heartbeat on it, metrics managers publish metrics on it.
type server struct {
	mgr      *manager
	metrics  *metricsStore
	clock    Clock
	log      *zap.Logger
	maxFrame int
	limits   Limits

	mu    sync.Mutex
	conns map[*conn]struct{}
	wg    sync.WaitGroup
}

func newServer(mgr *manager, ms *metricsStore, s *settings, log *zap.Logger) *server {
	return &server{mgr: mgr, metrics: ms, clock: s.Clock, log: log, maxFrame: s.maxFrame, limits: s.Limits, conns: map[*conn]struct{}{}}
}

// firstFrameTimeout bounds the wait for a new connection's first frame.
// Metrics managers send their first report within one export interval.
const firstFrameTimeout = time.Minute

// acceptLoop serves ln until it is closed.
func (s *server) acceptLoop(ctx context.Context, ln net.Listener) {
	delay := 5 * time.Millisecond
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or similar: back off a little.
			s.log.Warn("accept on the server port failed", zap.Error(err))
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return
			}
			delay = min(2*delay, time.Second)
			continue
		}
		delay = 5 * time.Millisecond
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		// A peer must say who it is soon; a silent one would hold a
		// connection slot forever. readLoop lifts the deadline.
		_ = nc.SetReadDeadline(time.Now().Add(firstFrameTimeout))
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(nc, nc.RemoteAddr().String())
		}()
	}
}

// serveConn runs one connection until it ends; it never panics on bad
// input: a protocol error is logged with the peer and closes the
// connection only.
func (s *server) serveConn(rwc io.ReadWriteCloser, peer string) {
	c := newConn(rwc, peer, s.limits.ConnQueue)
	if ok, stopping := s.track(c); !ok {
		if !stopping {
			s.log.Error("too many connections on the server port; closing the new one",
				zap.String("peer", peer), zap.Int("limit", s.limits.MaxConnections))
		}
		_ = rwc.Close()
		return
	}
	defer s.untrack(c)
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		c.writeLoop(s.limits.WriteTimeout)
	}()
	err := s.readLoop(c)
	switch {
	case errors.Is(err, errRejected):
		c.closeAfterFlush(err.Error())
	case c.closedReason() != "":
		s.log.Info("connection closed", zap.String("peer", peer), zap.String("reason", c.closedReason()))
	case err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
		s.log.Debug("peer closed the connection", zap.String("peer", peer), zap.Int("container", s.containerOf(c)))
	default:
		s.log.Error("closing connection after a protocol error", zap.String("peer", peer), zap.Error(err))
	}
	if !errors.Is(err, errRejected) {
		c.close("connection ended")
	}
	<-wdone
	c.close("connection ended")
	s.mgr.connClosed(c)
}

func (s *server) containerOf(c *conn) int {
	s.mgr.mu.Lock()
	defer s.mgr.mu.Unlock()
	return c.container
}

func (s *server) readLoop(c *conn) error {
	r := bufio.NewReaderSize(c.rwc, 64<<10)
	var buf []byte
	for !c.isClosed() {
		t, payload, nb, err := wire.ReadFrame(r, buf, s.maxFrame)
		buf = nb
		if err != nil {
			if errors.Is(err, wire.ErrFrameTooLarge) || errors.Is(err, wire.ErrCorrupt) {
				return fmt.Errorf("bad frame: %w", err)
			}
			return err
		}
		if d, ok := c.rwc.(interface{ SetReadDeadline(time.Time) error }); ok {
			_ = d.SetReadDeadline(time.Time{})
		}
		if err := s.handleFrame(c, t, payload); err != nil {
			return err
		}
		// Keep no large buffer alive between frames.
		if cap(buf) > 1<<20 {
			buf = nil
		}
	}
	return nil
}

// handleFrame dispatches one frame read from c.
func (s *server) handleFrame(c *conn, t wire.FrameType, payload []byte) error {
	switch t {
	case wire.FrameStMgrRegisterRequest, wire.FrameStMgrHeartbeat, wire.FrameMetricsPublish:
	case wire.FrameInstanceStateStored, wire.FrameRestoreTopologyStateResponse, wire.FrameResetTopologyState:
		msg, err := wire.DecodeMessage(t, payload)
		if err != nil {
			return err
		}
		return s.mgr.handleCheckpointMsg(c, msg)
	default:
		return fmt.Errorf("unexpected %s frame on the topology manager's server port (it accepts StMgrRegisterRequest, StMgrHeartbeat, MetricsPublish and the checkpoint reports)", t)
	}
	msg, err := wire.DecodeMessage(t, payload)
	if err != nil {
		return err
	}
	switch m := msg.(type) {
	case *egretpb.StMgrRegisterRequest:
		return s.mgr.register(c, m)
	case *egretpb.StMgrHeartbeat:
		resp := &egretpb.StMgrHeartbeatResponse{Error: s.mgr.heartbeat(c, m)}
		if resp.Error != "" {
			s.log.Warn("heartbeat refused", zap.String("peer", c.peer), zap.String("reason", resp.Error))
		}
		c.send(encode(resp, s.log))
	case *egretpb.MetricsPublish:
		c.metrics.Store(true)
		s.metrics.add(m, s.clock.Now())
	}
	return nil
}

// track adds c to the open connections; false when the limit is reached
// or the server is stopping.
func (s *server) track(c *conn) (ok, stopping bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		return false, true
	}
	if len(s.conns) >= s.limits.MaxConnections {
		return false, false
	}
	s.conns[c] = struct{}{}
	return true, false
}

func (s *server) untrack(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// shutdown closes every connection and waits for their goroutines.
func (s *server) shutdown() {
	s.mu.Lock()
	conns := s.conns
	s.conns = nil // refuse new ones
	s.mu.Unlock()
	for c := range conns {
		c.close("topology manager shutting down")
	}
	s.wg.Wait()
}
