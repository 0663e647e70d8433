package scale

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// standin is one container's stream manager as the topology manager sees
// it: it registers, heartbeats, takes plans, answers the checkpoint
// protocol for its tasks, and registers again when the topology manager
// drops it (as a stream manager does). It has no data plane.
type standin struct {
	container int32
	port      int32 // the data port it registers (never listened on)
	tasks     []int32
	id        string
	heartbeat time.Duration

	frozen chan struct{} // closed by freeze
	closed chan struct{} // closed by close
	done   chan struct{} // run returned
	fOnce  sync.Once
	cOnce  sync.Once

	wmu  sync.Mutex
	conn net.Conn // the current session's; guarded by wmu

	registeredAt atomic.Int64          // unix nanos the first registration was sent
	firstPlanAt  atomic.Int64          // unix nanos the first plan arrived
	droppedAt    atomic.Int64          // unix nanos the topology manager closed the connection of a frozen stand-in
	reconnects   atomic.Int64          // registrations after the first
	dropErr      atomic.Pointer[error] // why the last session before a reconnect ended
	version      atomic.Uint64         // the latest plan's
	watch        atomic.Pointer[watchSpec]
	processing   atomic.Int64 // the epoch StartProcessing announced
	startedAt    sync.Map     // checkpoint id -> unix nanos StartCheckpoint arrived
	completedAt  sync.Map     // checkpoint id -> unix nanos CheckpointComplete arrived
	err          atomic.Pointer[error]
}

// watchSpec records when a plan first listed container at port.
type watchSpec struct {
	container, port int32
	at              atomic.Int64
}

func newStandin(id string, container, port int32, tasks []int32, heartbeat time.Duration) *standin {
	return &standin{id: id, container: container, port: port, tasks: tasks, heartbeat: heartbeat,
		frozen: make(chan struct{}), closed: make(chan struct{}), done: make(chan struct{})}
}

// errFrozen ends the session of a frozen stand-in.
var errFrozen = errors.New("frozen")

// run registers at addr and keeps a session until close; after freeze it
// only notes when the topology manager drops it.
func (s *standin) run(addr string) {
	defer close(s.done)
	for first := true; ; first = false {
		err := s.session(addr, first)
		select {
		case <-s.closed:
			return
		case <-s.frozen:
			if s.droppedAt.Load() == 0 {
				s.droppedAt.Store(time.Now().UnixNano())
			}
			return
		default:
		}
		if first && s.firstPlanAt.Load() == 0 {
			s.fail(err)
			return
		}
		s.reconnects.Add(1)
		s.dropErr.Store(&err)
		select {
		case <-time.After(100 * time.Millisecond):
		case <-s.closed:
			return
		}
	}
}

// session dials, registers and serves one connection until it ends.
func (s *standin) session(addr string, first bool) error {
	conn, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		return fmt.Errorf("container %d: dial the topology manager: %w", s.container, err)
	}
	s.wmu.Lock()
	s.conn = conn
	s.wmu.Unlock()
	defer conn.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-s.closed:
			_ = conn.Close()
		case <-stop:
		}
	}()
	if first {
		s.registeredAt.Store(time.Now().UnixNano())
	}
	if err := s.send(&egretpb.StMgrRegisterRequest{TopologyId: s.id, TaskIds: s.tasks,
		Location: &egretpb.StMgrLocation{Container: s.container, Host: "127.0.0.1", DataPort: s.port}}); err != nil {
		return fmt.Errorf("container %d: register: %w", s.container, err)
	}
	go s.beat(stop)
	return s.read(conn)
}

func (s *standin) send(m proto.Message) error {
	b, err := wire.AppendMessage(nil, m)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, err = s.conn.Write(b)
	return err
}

func (s *standin) fail(err error) {
	s.err.CompareAndSwap(nil, &err)
}

func (s *standin) isFrozen() bool {
	select {
	case <-s.frozen:
		return true
	default:
		return false
	}
}

func (s *standin) read(conn net.Conn) error {
	r := bufio.NewReaderSize(conn, 64<<10)
	var buf []byte
	for {
		t, payload, nb, err := wire.ReadFrame(r, buf, wire.DefaultMaxFrame)
		buf = nb
		if err != nil {
			return fmt.Errorf("container %d: connection to the topology manager: %w", s.container, err)
		}
		if s.isFrozen() {
			continue // frozen: acts on nothing, answers nothing
		}
		if err := s.handle(t, payload, time.Now().UnixNano()); err != nil {
			return err
		}
	}
}

// handle acts on one frame from the topology manager.
func (s *standin) handle(t wire.FrameType, payload []byte, now int64) error {
	switch t {
	case wire.FrameNewPhysicalPlan, wire.FrameStMgrRegisterResponse:
		field := protowire.Number(fieldNewPlanPplan)
		if t == wire.FrameStMgrRegisterResponse {
			field = fieldRegisterResponse
			if msg, err := embedded(payload, fieldRegisterError); err != nil || len(msg) > 0 {
				s.fail(fmt.Errorf("container %d: registration refused: %q (%v)", s.container, msg, err))
				s.close()
				return errFrozen
			}
		}
		pp, err := embedded(payload, field)
		if err == nil && pp != nil {
			var h planHeader
			if h, err = scanPlan(pp); err == nil {
				s.plan(h, now)
			}
		}
		if err != nil {
			return fmt.Errorf("container %d: %s: %w", s.container, t, err)
		}
		return nil
	}
	m, err := wire.DecodeMessage(t, payload)
	if err != nil {
		return fmt.Errorf("container %d: %w", s.container, err)
	}
	switch m := m.(type) {
	case *egretpb.StMgrHeartbeatResponse:
		if m.GetError() != "" {
			return fmt.Errorf("container %d: heartbeat refused: %s", s.container, m.GetError())
		}
	case *egretpb.RestoreTopologyState:
		err = s.send(&egretpb.RestoreTopologyStateResponse{Container: s.container, CheckpointId: m.GetCheckpointId(), Epoch: m.GetEpoch()})
	case *egretpb.StartProcessing:
		s.processing.Store(m.GetEpoch())
	case *egretpb.StartCheckpoint:
		s.startedAt.LoadOrStore(m.GetCheckpointId(), now)
		// What this container's instances report once their state
		// (empty here) is stored.
		for _, task := range s.tasks {
			if err = s.send(&egretpb.InstanceStateStored{CheckpointId: m.GetCheckpointId(), Epoch: m.GetEpoch(), TaskId: task}); err != nil {
				break
			}
		}
	case *egretpb.CheckpointComplete:
		s.completedAt.LoadOrStore(m.GetCheckpointId(), now)
	default:
		s.fail(fmt.Errorf("container %d: unexpected %s from the topology manager", s.container, t))
		s.close()
		return errFrozen
	}
	if err != nil {
		return fmt.Errorf("container %d: reply to the topology manager: %w", s.container, err)
	}
	return nil
}

func (s *standin) plan(h planHeader, now int64) {
	if h.version <= s.version.Load() {
		return
	}
	if w := s.watch.Load(); w != nil && w.at.Load() == 0 && h.ports[w.container] == w.port {
		w.at.Store(now)
	}
	s.version.Store(h.version)
	s.firstPlanAt.CompareAndSwap(0, now)
}

func (s *standin) beat(stop <-chan struct{}) {
	t := time.NewTicker(s.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-s.frozen:
			return
		case <-t.C:
			// A failed write ends the session through its reader.
			_ = s.send(&egretpb.StMgrHeartbeat{Container: s.container, SentUnixNanos: time.Now().UnixNano(), ConnectedInstances: int32(len(s.tasks))})
		}
	}
}

// freeze makes the stand-in silent with its connection open, as a
// stopped (SIGSTOP) or hung stream manager: no heartbeats, no answers.
func (s *standin) freeze() {
	s.fOnce.Do(func() { close(s.frozen) })
}

// close ends the stand-in and waits for it.
func (s *standin) close() {
	s.cOnce.Do(func() { close(s.closed) })
}

func (s *standin) wait() { <-s.done }
