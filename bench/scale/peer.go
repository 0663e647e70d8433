package scale

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// countingPeer is a stand-in container's data port: it accepts the real
// stream managers' peer connections (hello, then their frames) and counts
// the back-pressure announcements they send.
type countingPeer struct {
	ln            net.Listener
	id            string
	announcements atomic.Int64
	conns         atomic.Int64
	wg            sync.WaitGroup
	mu            sync.Mutex
	open          []net.Conn
}

func newCountingPeer(id string) (*countingPeer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &countingPeer{ln: ln, id: id}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *countingPeer) port() int32 { return int32(p.ln.Addr().(*net.TCPAddr).Port) }

func (p *countingPeer) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.open = append(p.open, c)
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c)
		}()
	}
}

func (p *countingPeer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	_, m, _, err := wire.ReadMessage(r, nil, wire.DefaultMaxFrame)
	if err != nil {
		return
	}
	if h, ok := m.(*egretpb.StMgrHello); !ok || h.GetTopologyId() != p.id {
		_ = wire.WriteMessage(c, &egretpb.StMgrHelloResponse{Error: "not a hello of this topology"})
		return
	}
	if err := wire.WriteMessage(c, &egretpb.StMgrHelloResponse{}); err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	p.conns.Add(1)
	var buf []byte
	for {
		t, _, nb, err := wire.ReadFrame(r, buf, wire.DefaultMaxFrame)
		buf = nb
		if err != nil {
			return
		}
		if t == wire.FrameBackPressure {
			p.announcements.Add(1)
		}
	}
}

// close stops accepting, closes every connection and waits.
func (p *countingPeer) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
