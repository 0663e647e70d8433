package stmgrtest

import (
	"bufio"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// FakeTManager is a minimal topology manager: it publishes its location
// in the state manager, accepts StMgrRegisterRequest, answers heartbeats,
// and once every container of the packing plan has a registered stream
// manager it sends the physical plan to all of them — again, with a new
// version, whenever one registers anew.
type FakeTManager struct {
	t     testing.TB
	name  string
	ln    net.Listener
	store *state.Store

	mu      sync.Mutex
	base    *egretpb.PhysicalPlan // topology, packing, state
	locs    map[int32]*egretpb.StMgrLocation
	conns   map[int32]net.Conn
	all     map[net.Conn]struct{}
	version uint64
	sent    bool
	reject  int
	regs    int
	beats   int
	closed  bool
	wg      sync.WaitGroup
}

// StartFakeTManager starts a fake topology manager for the plan's
// topology, packing and state (default RUNNING); its plan versions
// continue after pp.Version. It registers its location through sm and
// stops at the end of the test.
func StartFakeTManager(t testing.TB, sm spi.StateManager, name string, pp *egretpb.PhysicalPlan) *FakeTManager {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &FakeTManager{
		t: t, name: name, ln: ln, store: state.New(sm),
		base:    proto.Clone(pp).(*egretpb.PhysicalPlan),
		locs:    map[int32]*egretpb.StMgrLocation{},
		conns:   map[int32]net.Conn{},
		all:     map[net.Conn]struct{}{},
		version: pp.GetVersion(),
	}
	if f.base.State == egretpb.TopologyState_TOPOLOGY_STATE_UNSPECIFIED {
		f.base.State = egretpb.TopologyState_TOPOLOGY_STATE_RUNNING
	}
	loc := &egretpb.TManagerLocation{
		TopologyName: name, TopologyId: pp.GetTopology().GetId(),
		Host: "127.0.0.1", ServerPort: int32(ln.Addr().(*net.TCPAddr).Port),
	}
	if err := f.store.RegisterTManager(context.Background(), loc); err != nil {
		t.Fatal(err)
	}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.Stop)
	return f
}

// Addr is the fake's server address.
func (f *FakeTManager) Addr() string { return f.ln.Addr().String() }

// Stop closes the listener and every connection (the location node stays
// until its session ends).
func (f *FakeTManager) Stop() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	_ = f.ln.Close()
	for c := range f.all {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// RejectHeartbeats answers the next n heartbeats with an error, as a
// topology manager does for a stream manager it evicted.
func (f *FakeTManager) RejectHeartbeats(n int) {
	f.mu.Lock()
	f.reject += n
	f.mu.Unlock()
}

// Registrations counts accepted StMgrRegisterRequests.
func (f *FakeTManager) Registrations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.regs
}

// Heartbeats counts heartbeats received.
func (f *FakeTManager) Heartbeats() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.beats
}

// Plan returns the last plan sent, or nil.
func (f *FakeTManager) Plan() *egretpb.PhysicalPlan {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.sent {
		return nil
	}
	return f.planLocked()
}

// SetState changes the topology state and broadcasts a new plan.
func (f *FakeTManager) SetState(s egretpb.TopologyState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.base.State = s
	f.broadcastLocked(nil)
}

// SetPacking replaces the packing plan (and the topology, when not nil)
// and broadcasts a new plan.
func (f *FakeTManager) SetPacking(topo *egretpb.Topology, packing *egretpb.PackingPlan) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if topo != nil {
		f.base.Topology = topo
	}
	f.base.Packing = packing
	f.broadcastLocked(nil)
}

func (f *FakeTManager) planLocked() *egretpb.PhysicalPlan {
	pp := proto.Clone(f.base).(*egretpb.PhysicalPlan)
	pp.Version = f.version
	pp.Stmgrs = nil
	for _, c := range f.base.GetPacking().GetContainers() {
		if l := f.locs[c.GetId()]; l != nil {
			pp.Stmgrs = append(pp.Stmgrs, l)
		}
	}
	return pp
}

func (f *FakeTManager) completeLocked() bool {
	for _, c := range f.base.GetPacking().GetContainers() {
		if f.locs[c.GetId()] == nil {
			return false
		}
	}
	return true
}

// broadcastLocked sends a new plan version to every registered stream
// manager except skip.
func (f *FakeTManager) broadcastLocked(skip net.Conn) *egretpb.PhysicalPlan {
	if !f.completeLocked() {
		return nil
	}
	f.version++
	f.sent = true
	pp := f.planLocked()
	b, err := wire.AppendMessage(nil, &egretpb.NewPhysicalPlan{Pplan: pp})
	if err != nil {
		f.t.Errorf("fake tmanager: %v", err)
		return nil
	}
	for _, c := range f.conns {
		if c != skip {
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.Write(b)
		}
	}
	return pp
}

func (f *FakeTManager) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			_ = c.Close()
			return
		}
		f.all[c] = struct{}{}
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(c)
	}
}

func (f *FakeTManager) serve(c net.Conn) {
	defer f.wg.Done()
	defer func() {
		_ = c.Close()
		f.mu.Lock()
		delete(f.all, c)
		for id, cc := range f.conns {
			if cc == c {
				delete(f.conns, id)
			}
		}
		f.mu.Unlock()
	}()
	br := bufio.NewReader(c)
	var buf []byte
	for {
		_, m, nb, err := wire.ReadMessage(br, buf, wire.DefaultMaxFrame)
		buf = nb
		if err != nil {
			return
		}
		switch m := m.(type) {
		case *egretpb.StMgrRegisterRequest:
			f.mu.Lock()
			var resp egretpb.StMgrRegisterResponse
			id := m.GetLocation().GetContainer()
			if m.GetTopologyId() != f.base.GetTopology().GetId() {
				resp.Error = "wrong topology id"
			} else {
				f.regs++
				if old := f.conns[id]; old != nil && old != c {
					_ = old.Close()
				}
				f.locs[id] = m.GetLocation()
				f.conns[id] = c
				resp.Pplan = f.broadcastLocked(c)
			}
			// Answer under the lock so that no broadcast overtakes the
			// response on this connection.
			err := wire.WriteMessage(c, &resp)
			f.mu.Unlock()
			if err != nil {
				return
			}
		case *egretpb.StMgrHeartbeat:
			f.mu.Lock()
			f.beats++
			var resp egretpb.StMgrHeartbeatResponse
			if f.reject > 0 {
				f.reject--
				resp.Error = "stream manager not registered (evicted)"
			}
			err := wire.WriteMessage(c, &resp)
			f.mu.Unlock()
			if err != nil {
				return
			}
		default:
			f.t.Errorf("fake tmanager: unexpected %T", m)
			return
		}
	}
}

// WaitFor polls cond every few milliseconds until it holds or timeout
// passes, then fails the test with what.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
