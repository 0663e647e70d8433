package stmgr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// peer is the outgoing connection to another container's stream manager.
// Its queue lives as long as the peer is in the physical plan.
type peer struct {
	dest
	container int32
	cancel    context.CancelFunc
	connected atomic.Bool

	mu       sync.Mutex
	addr     string
	connAddr string        // address of the current connection, "" when down
	kick     chan struct{} // a token when addr changed
}

func (p *peer) connectedTo() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.connAddr
}

func (p *peer) setConnected(addr string) {
	p.mu.Lock()
	p.connAddr = addr
	p.mu.Unlock()
	p.connected.Store(addr != "")
	p.live.Store(addr != "")
	if addr != "" {
		p.starting.Store(false)
	}
}

func (s *StMgr) newPeer(container int32, addr string) *peer {
	p := &peer{container: container, addr: addr, kick: make(chan struct{}, 1)}
	p.name = fmt.Sprintf("stmgr %d", container)
	p.q = wire.NewQueue(s.set.bufferMax, frameSize)
	p.q.SetBlocking(false) // until connected
	// Until its first connection, its queue counts for back pressure, so
	// tuples emitted before the mesh is up wait instead of being dropped.
	p.starting.Store(true)
	return p
}

func (p *peer) address() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// setAddr moves the peer: the current connection is closed and the new
// address dialled at once.
func (p *peer) setAddr(addr string) {
	p.mu.Lock()
	changed := p.addr != addr
	p.addr = addr
	p.mu.Unlock()
	if changed {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// runPeer keeps a connection to the peer and writes its queue to it,
// reconnecting with backoff, until ctx ends (shutdown, or the peer left
// the plan).
func (s *StMgr) runPeer(ctx context.Context, p *peer) {
	defer s.wg.Done()
	log := s.log.With(zap.Int32("peer_container", p.container))
	bo := wire.Backoff{Initial: s.cfg.ReconnectMin, Max: s.cfg.ReconnectMax}
	failures := 0
	for ctx.Err() == nil {
		addr := p.address()
		conn, err := s.dialPeer(ctx, addr)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failures++
			if failures == 1 || failures%50 == 0 {
				log.Warn("cannot connect to peer stream manager; retrying", zap.String("addr", addr), zap.Int("attempts", failures), zap.Error(err))
			}
			select {
			case <-time.After(bo.Next()):
			case <-p.kick:
				bo.Reset()
			case <-ctx.Done():
			}
			continue
		}
		if !s.track(conn) {
			_ = conn.Close()
			break
		}
		s.sizeSocket(conn)
		failures = 0
		bo.Reset()
		log.Info("connected to peer stream manager", zap.String("addr", addr))
		p.setConnected(addr)
		p.q.SetMax(s.set.liveMax)
		p.q.SetBlocking(true)
		// A new connection learns the current state at once.
		ann := wire.AppendBackPressure(nil, s.currentAnnouncement())
		p.ctl.Store(&ann)
		s.c.peersConnected.Add(1)
		stop := make(chan struct{})
		watcherDone := make(chan struct{})
		readerDone := make(chan struct{})
		go func() {
			// The peer never writes on this connection: a read returns
			// only when it closes (or misbehaves).
			defer close(readerDone)
			var b [1]byte
			_, _ = conn.Read(b[:])
		}()
		go func() {
			defer close(watcherDone)
			select {
			case <-p.kick:
				log.Info("peer stream manager moved; reconnecting", zap.String("addr", p.address()))
			case <-ctx.Done():
			case <-readerDone:
			}
			close(stop)
			_ = conn.Close()
		}()
		err = s.writeLoop(s.newConnWriter(conn), &p.dest, stop, nil, true, true)
		_ = conn.Close()
		<-watcherDone
		p.q.SetBlocking(false)
		p.q.SetMax(s.set.bufferMax)
		p.setConnected("")
		s.checkWatermarks()
		s.c.peersConnected.Add(-1)
		s.untrack(conn)
		if ctx.Err() == nil {
			log.Warn("lost connection to peer stream manager; reconnecting", zap.String("addr", addr), zap.Error(err))
		}
	}
	p.q.Close()
	p.q.Discard(s.dropFrame(&p.dest))
}

// dialPeer connects to a peer and says hello.
func (s *StMgr) dialPeer(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: s.cfg.HandshakeTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if err := wire.WriteMessage(conn, &egretpb.StMgrHello{TopologyId: s.cfg.TopologyID, Container: int32(s.cfg.Container), Epoch: s.eo.epoch.Load()}); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("hello: %w", err)
	}
	_, m, _, err := wire.ReadMessage(bufio.NewReaderSize(conn, 512), nil, 1<<20)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("hello response: %w", err)
	}
	resp, ok := m.(*egretpb.StMgrHelloResponse)
	if !ok {
		_ = conn.Close()
		return nil, fmt.Errorf("%w: expected StMgrHelloResponse, got %s", wire.ErrCorrupt, m.ProtoReflect().Descriptor().Name())
	}
	if resp.GetError() != "" {
		_ = conn.Close()
		return nil, fmt.Errorf("peer refused the connection: %s", resp.GetError())
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

// servePeer handles a connection accepted on the TCP port: the peer's
// hello, then its data frames for local tasks.
func (s *StMgr) servePeer(ctx context.Context, conn net.Conn) {
	who := "peer (no hello yet)"
	br := bufio.NewReaderSize(conn, 64<<10)
	_ = conn.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	t, m, _, err := wire.ReadMessage(br, nil, s.set.maxFrame)
	if err != nil {
		s.closeReason(who, conn, fmt.Errorf("hello: %w", err))
		return
	}
	hello, ok := m.(*egretpb.StMgrHello)
	if !ok {
		s.closeReason(who, conn, fmt.Errorf("%w: expected StMgrHello, got %s", wire.ErrCorrupt, t))
		return
	}
	who = fmt.Sprintf("stmgr %d", hello.GetContainer())
	var refuse error
	switch {
	case hello.GetTopologyId() != s.cfg.TopologyID:
		refuse = fmt.Errorf("peer serves topology id %q, this stream manager serves %q", hello.GetTopologyId(), s.cfg.TopologyID)
	case hello.GetContainer() < 1 || int(hello.GetContainer()) == s.cfg.Container:
		refuse = fmt.Errorf("peer claims container %d", hello.GetContainer())
	}
	_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if refuse != nil {
		_ = wire.WriteMessage(conn, &egretpb.StMgrHelloResponse{Error: refuse.Error()})
		s.closeReason(who, conn, refuse)
		return
	}
	if err := wire.WriteMessage(conn, &egretpb.StMgrHelloResponse{}); err != nil {
		s.closeReason(who, conn, fmt.Errorf("hello response: %w", err))
		return
	}
	_ = conn.SetDeadline(time.Time{})
	s.log.Info("peer stream manager connected", zap.String("peer", who), zap.String("remote", remote(conn)))
	err = s.readLoop(ctx, br, s.newInbound(hello.GetContainer(), nil, hello.GetEpoch()), nil)
	s.peerGone(hello.GetContainer())
	if ctx.Err() != nil && !errors.Is(err, wire.ErrCorrupt) {
		err = nil
	}
	s.closeReason(who, conn, err)
}
