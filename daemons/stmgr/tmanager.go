package stmgr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// TManagerFinder tells a stream manager where its topology manager
// listens: the state manager's node (state.Store is one) or what an
// executor hands a container process (daemons/tmlocation).
type TManagerFinder interface {
	// TManagerLocation returns the location of topology's topology
	// manager: an error wrapping spi.ErrNotFound while none is registered.
	TManagerLocation(ctx context.Context, topology string) (*egretpb.TManagerLocation, error)
	// WatchTManager returns a channel that receives when the location may
	// have changed, closed when the watch ends.
	WatchTManager(ctx context.Context, topology string) (<-chan spi.Event, error)
}

// storeFinder finds the topology manager through the state manager.
type storeFinder struct{ *state.Store }

func (f storeFinder) WatchTManager(ctx context.Context, topology string) (<-chan spi.Event, error) {
	return f.Watch(ctx, state.TManagersDir, topology)
}

// finder returns the configured TManagerFinder.
func (s *StMgr) finder() TManagerFinder {
	if s.cfg.TManager != nil {
		return s.cfg.TManager
	}
	return storeFinder{state.New(s.cfg.StateManager)}
}

// tmWatch is the watch on the topology manager's node; nil events means
// the watch is gone and the client polls.
type tmWatch struct {
	events <-chan spi.Event
}

// next waits for a change of the node, d, or ctx. It reports whether the
// node changed.
func (w *tmWatch) next(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case _, ok := <-w.events:
		if !ok {
			w.events = nil
		}
		return ok
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// runTManager finds the topology manager through the state manager,
// registers with it, heartbeats and applies the plans it sends, and
// starts over whenever the connection fails or the location changes.
func (s *StMgr) runTManager(ctx context.Context) {
	st := s.finder()
	w := &tmWatch{}
	if ev, err := st.WatchTManager(ctx, s.cfg.TopologyName); err != nil {
		s.log.Warn("cannot watch the topology manager location; polling it", zap.Error(err))
	} else {
		w.events = ev
	}
	bo := wire.Backoff{Initial: s.cfg.ReconnectMin, Max: s.cfg.ReconnectMax}
	waiting := false
	for ctx.Err() == nil {
		loc, err := st.TManagerLocation(ctx, s.cfg.TopologyName)
		if err == nil && loc.GetTopologyId() != "" && loc.GetTopologyId() != s.cfg.TopologyID {
			err = fmt.Errorf("the registered topology manager serves topology id %q, this stream manager serves %q (a stale submission?)", loc.GetTopologyId(), s.cfg.TopologyID)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !waiting {
				if errors.Is(err, spi.ErrNotFound) {
					s.log.Info("waiting for the topology manager to register its location")
				} else {
					s.log.Warn("cannot read the topology manager location; retrying", zap.Error(err))
				}
				waiting = true
			}
			if w.next(ctx, bo.Next()) {
				bo.Reset()
			}
			continue
		}
		waiting = false
		registered, err := s.tmanagerSession(ctx, loc, st, w)
		if ctx.Err() != nil {
			return
		}
		if registered {
			bo.Reset()
		}
		s.log.Warn("topology manager connection ended; reconnecting", zap.String("addr", tmAddr(loc)), zap.Error(err))
		w.next(ctx, bo.Next())
	}
}

func tmAddr(loc *egretpb.TManagerLocation) string {
	return net.JoinHostPort(loc.GetHost(), strconv.Itoa(int(loc.GetServerPort())))
}

// tmanagerSession registers with the topology manager at loc and serves
// the connection until it fails, the location changes or ctx ends. It
// reports whether the registration succeeded.
func (s *StMgr) tmanagerSession(ctx context.Context, loc *egretpb.TManagerLocation, st TManagerFinder, w *tmWatch) (bool, error) {
	addr := tmAddr(loc)
	d := net.Dialer{Timeout: s.cfg.HandshakeTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, err
	}
	if !s.track(conn) {
		_ = conn.Close()
		return false, ctx.Err()
	}
	defer s.untrack(conn)
	br := bufio.NewReaderSize(conn, 64<<10)
	req := &egretpb.StMgrRegisterRequest{
		TopologyId: s.cfg.TopologyID,
		Location:   &egretpb.StMgrLocation{Container: int32(s.cfg.Container), Host: s.cfg.Host, DataPort: int32(s.Port())},
		TaskIds:    s.connectedTasks(),
	}
	_ = conn.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if err := wire.WriteMessage(conn, req); err != nil {
		return false, fmt.Errorf("register: %w", err)
	}
	t, m, buf, err := wire.ReadMessage(br, nil, s.set.maxFrame)
	if err != nil {
		return false, fmt.Errorf("register response: %w", err)
	}
	resp, ok := m.(*egretpb.StMgrRegisterResponse)
	if !ok {
		return false, fmt.Errorf("%w: expected StMgrRegisterResponse, got %s", wire.ErrCorrupt, t)
	}
	if resp.GetError() != "" {
		return false, fmt.Errorf("topology manager refused the registration: %s", resp.GetError())
	}
	_ = conn.SetDeadline(time.Time{})
	s.c.registrations.Add(1)
	s.log.Info("registered with the topology manager", zap.String("addr", addr), zap.Bool("has_plan", resp.GetPplan() != nil))
	if resp.GetPplan() != nil {
		s.applyPlan(resp.GetPplan(), true)
	}

	errc := make(chan error, 1)
	go func() {
		for {
			t, m, nb, err := wire.ReadMessage(br, buf, s.set.maxFrame)
			buf = nb
			if err != nil {
				errc <- err
				return
			}
			if s.handleTMCheckpoint(m) {
				continue
			}
			switch m := m.(type) {
			case *egretpb.NewPhysicalPlan:
				s.applyPlan(m.GetPplan(), false)
			case *egretpb.StMgrHeartbeatResponse:
				if m.GetError() != "" {
					errc <- fmt.Errorf("topology manager rejected a heartbeat: %s", m.GetError())
					return
				}
			default:
				errc <- fmt.Errorf("%w: unexpected %s from the topology manager", wire.ErrCorrupt, t)
				return
			}
		}
	}()
	defer func() { _ = conn.Close() }()
	tick := time.NewTicker(s.set.heartbeat)
	defer tick.Stop()
	var msg []byte
	for {
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case err := <-errc:
			return true, err
		case _, ok := <-w.events:
			if !ok {
				w.events = nil
				continue
			}
			now, err := st.TManagerLocation(ctx, s.cfg.TopologyName)
			if err != nil {
				return true, fmt.Errorf("topology manager location: %w", err)
			}
			if tmAddr(now) != addr {
				return true, fmt.Errorf("the topology manager moved to %s", tmAddr(now))
			}
		case b := <-s.eo.tmOut:
			_ = conn.SetWriteDeadline(time.Now().Add(s.set.heartbeat + s.cfg.HandshakeTimeout))
			if _, err := conn.Write(b); err != nil {
				return true, fmt.Errorf("checkpoint message: %w", err)
			}
		case <-tick.C:
			hb := &egretpb.StMgrHeartbeat{
				Container:          int32(s.cfg.Container),
				SentUnixNanos:      time.Now().UnixNano(),
				ConnectedInstances: int32(s.c.instancesConnected.Load()),
			}
			if msg, err = wire.AppendMessage(msg[:0], hb); err != nil {
				return true, err
			}
			_ = conn.SetWriteDeadline(time.Now().Add(s.set.heartbeat + s.cfg.HandshakeTimeout))
			if _, err := conn.Write(msg); err != nil {
				return true, fmt.Errorf("heartbeat: %w", err)
			}
		}
	}
}
