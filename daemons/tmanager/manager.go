package tmanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// stateWriteTimeout bounds one write of the physical plan.
const stateWriteTimeout = 10 * time.Second

// manager holds the topology manager's view of the topology: the current
// packing plan, the registered stream managers and the last physical plan.
// Every change runs under mu; a new physical plan is written to the state
// manager and queued on every stream manager connection under mu, so plans
// leave in version order.
type manager struct {
	name, id string
	store    *state.Store
	clock    Clock
	log      *zap.Logger
	timeout  time.Duration // heartbeat timeout
	metrics  *metricsStore
	ctx      context.Context // for state writes; ends with Run
	// autoSources: the metrics store's bound follows the packing plan.
	autoSources bool

	mu             sync.Mutex
	topo           *topology.Topology // parallelism synced with packing
	packing        *plan.PackingPlan
	packingVersion int64
	expected       map[int]bool // containers of the packing plan
	stmgrs         map[int]*stmgrEntry
	state          egretpb.TopologyState
	runtimeConfig  map[string]string
	version        uint64
	pplan          *egretpb.PhysicalPlan // last plan built; nil before the first
	complete       bool                  // pplan is current: every stream manager of the packing plan is in it
	stopping       bool
	ckpt           coordinator // effectively-once checkpoints
}

type stmgrEntry struct {
	loc           *egretpb.StMgrLocation
	conn          *conn
	lastHeartbeat time.Time
}

// errRejected ends a connection whose registration was refused.
var errRejected = errors.New("registration rejected")

// initial is what Run read from the state manager.
type initial struct {
	topo           *topology.Topology
	packing        *plan.PackingPlan
	packingVersion int64
	deactivated    bool
	previous       *egretpb.PhysicalPlan // nil when none (or of another submission)
}

func newManager(ctx context.Context, s *settings, store *state.Store, ms *metricsStore, in initial, log *zap.Logger) (*manager, error) {
	m := &manager{
		name: s.TopologyName, id: s.TopologyID, store: store, clock: s.Clock, log: log,
		timeout: s.heartbeatTimeout, metrics: ms, ctx: ctx, autoSources: s.autoSources,
		stmgrs: map[int]*stmgrEntry{}, runtimeConfig: map[string]string{},
		state: egretpb.TopologyState_TOPOLOGY_STATE_RUNNING,
	}
	if in.deactivated {
		m.state = egretpb.TopologyState_TOPOLOGY_STATE_PAUSED
	}
	if p := in.previous; p != nil {
		// A restarted topology manager continues the version sequence and
		// keeps what operators changed (state, runtime config).
		m.version = p.GetVersion()
		if st := p.GetState(); st != egretpb.TopologyState_TOPOLOGY_STATE_UNSPECIFIED {
			m.state = st
		}
		maps.Copy(m.runtimeConfig, p.GetRuntimeConfig())
	}
	topo, err := m.checkPacking(in.topo, in.packing)
	if err != nil {
		return nil, err
	}
	m.setPackingLocked(topo, in.packing, in.packingVersion)
	if err := m.initCheckpoints(ctx, topo); err != nil {
		return nil, err
	}
	return m, nil
}

// checkPacking validates a packing plan against the topology and returns a
// copy of the topology whose parallelism is the plan's.
func (m *manager) checkPacking(t *topology.Topology, p *plan.PackingPlan) (*topology.Topology, error) {
	if t.ID != m.id {
		return nil, fmt.Errorf("the topology %q in the state manager has id %q, this topology manager was started for %q (a container of an earlier submission?)", m.name, t.ID, m.id)
	}
	if p.TopologyID != "" && p.TopologyID != m.id {
		return nil, fmt.Errorf("the packing plan of %q is for topology id %q, this topology manager serves %q", m.name, p.TopologyID, m.id)
	}
	if len(p.Containers) == 0 {
		return nil, fmt.Errorf("the packing plan of %q has no containers", m.name)
	}
	seen := map[int]bool{}
	count := map[string]int{}
	for _, c := range p.Containers {
		if seen[c.ID] {
			return nil, fmt.Errorf("the packing plan of %q lists container %d twice", m.name, c.ID)
		}
		seen[c.ID] = true
		for _, in := range c.Instances {
			if _, ok := t.Component(in.Component); !ok {
				return nil, fmt.Errorf("the packing plan of %q places task %d of component %q, which the topology does not have", m.name, in.TaskID, in.Component)
			}
			count[in.Component]++
		}
	}
	synced := t.Clone()
	for i := range synced.Components {
		synced.Components[i].Parallelism = count[synced.Components[i].Name]
	}
	if err := p.Validate(synced); err != nil {
		return nil, fmt.Errorf("the packing plan of %q is invalid: %w", m.name, err)
	}
	return synced, nil
}

func (m *manager) setPackingLocked(t *topology.Topology, p *plan.PackingPlan, version int64) {
	m.topo, m.packing, m.packingVersion = t, p, version
	m.expected = map[int]bool{}
	for _, c := range p.Containers {
		m.expected[c.ID] = true
	}
}

// applyPacking switches to a new packing plan: stream managers of removed
// containers are dropped, and a new physical plan (with the new topology
// parallelism) is built as soon as every container of the new plan has a
// registered stream manager.
func (m *manager) applyPacking(t *topology.Topology, p *plan.PackingPlan, version int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if version == m.packingVersion {
		return nil
	}
	synced, err := m.checkPacking(t, p)
	if err != nil {
		return err
	}
	if proto.Equal(p.ToProto(), m.packing.ToProto()) && proto.Equal(topology.ToProto(synced), topology.ToProto(m.topo)) {
		m.packingVersion = version
		return nil
	}
	m.setPackingLocked(synced, p, version)
	for c, e := range m.stmgrs {
		if !m.expected[c] {
			delete(m.stmgrs, c)
			e.conn.container = 0
			e.conn.closeAfterFlush(fmt.Sprintf("container %d was removed from the packing plan", c))
		}
	}
	m.complete = false
	m.metrics.retainTasks(p.Layout().ComponentOf)
	if m.autoSources {
		m.metrics.setMaxSources(sourcesFor(len(p.Containers), taskCount(p)))
	}
	m.log.Info("packing plan changed; waiting for the stream managers of the new plan",
		zap.Int64("packing_version", version), zap.Ints("containers", sortedKeys(m.expected)),
		zap.Ints("missing", m.missingLocked()))
	m.rebuildIfCompleteLocked("packing plan changed")
	return nil
}

// register handles a StMgrRegisterRequest on c. The response is queued
// on c before any plan broadcast it causes. It returns errRejected when
// the connection should be closed.
func (m *manager) register(c *conn, req *egretpb.StMgrRegisterRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	loc := req.GetLocation()
	container := int(loc.GetContainer())
	var problem string
	switch {
	case req.GetTopologyId() != m.id:
		problem = fmt.Sprintf("topology id %q does not match this topology manager's %q (a stream manager of another submission?)", req.GetTopologyId(), m.id)
	case loc == nil:
		problem = "the request has no location"
	case !m.expected[container]:
		problem = fmt.Sprintf("container %d is not in the packing plan of %q (containers %v)", container, m.name, sortedKeys(m.expected))
	case loc.GetHost() == "" || loc.GetDataPort() <= 0 || loc.GetDataPort() > 65535:
		problem = fmt.Sprintf("location %s:%d of container %d is not a valid host and port", loc.GetHost(), loc.GetDataPort(), container)
	}
	if problem != "" {
		m.log.Error("rejected stream manager registration", zap.String("peer", c.peer), zap.String("reason", problem))
		c.send(encode(&egretpb.StMgrRegisterResponse{Error: problem}, m.log))
		return fmt.Errorf("%w: %s", errRejected, problem)
	}
	if c.container != 0 && c.container != container {
		if e := m.stmgrs[c.container]; e != nil && e.conn == c {
			delete(m.stmgrs, c.container)
		}
	}
	old := m.stmgrs[container]
	if old != nil && old.conn != c {
		old.conn.container = 0
		old.conn.closeAfterFlush(fmt.Sprintf("replaced by a new registration of container %d from %s", container, c.peer))
		m.log.Info("stream manager re-registered; replacing its old connection",
			zap.Int("container", container), zap.String("old_peer", old.conn.peer), zap.String("peer", c.peer))
	}
	c.container = container
	m.stmgrs[container] = &stmgrEntry{loc: proto.Clone(loc).(*egretpb.StMgrLocation), conn: c, lastHeartbeat: m.clock.Now()}
	m.complete = false
	m.log.Info("stream manager registered", zap.Int("container", container), zap.String("peer", c.peer),
		zap.String("host", loc.GetHost()), zap.Int32("data_port", loc.GetDataPort()),
		zap.Int("registered", len(m.stmgrs)), zap.Int("expected", len(m.expected)))
	if !m.allRegisteredLocked() {
		c.send(encode(&egretpb.StMgrRegisterResponse{}, m.log))
		return nil
	}
	pp := m.buildLocked()
	c.send(encode(&egretpb.StMgrRegisterResponse{Pplan: pp}, m.log))
	m.publishLocked(pp, fmt.Sprintf("stream manager of container %d registered", container))
	m.ckptStmgrRegisteredLocked(container)
	return nil
}

// heartbeat handles a StMgrHeartbeat on c and returns the response's
// error text ("" when accepted).
func (m *manager) heartbeat(c *conn, hb *egretpb.StMgrHeartbeat) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.container == 0 {
		return "this connection has no registered stream manager; send StMgrRegisterRequest first"
	}
	if hb.GetContainer() != 0 && int(hb.GetContainer()) != c.container {
		return fmt.Sprintf("heartbeat names container %d, this connection registered container %d", hb.GetContainer(), c.container)
	}
	e := m.stmgrs[c.container]
	if e == nil || e.conn != c {
		return fmt.Sprintf("the registration of container %d on this connection is gone; register again", c.container)
	}
	e.lastHeartbeat = m.clock.Now()
	return ""
}

// connClosed forgets the stream manager registered on c, if any.
func (m *manager) connClosed(c *conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.container == 0 {
		return
	}
	if e := m.stmgrs[c.container]; e != nil && e.conn == c {
		delete(m.stmgrs, c.container)
		m.complete = false
		if m.stopping {
			c.container = 0
			return
		}
		m.log.Warn("stream manager disconnected; waiting for it to register again",
			zap.Int("container", c.container), zap.String("peer", c.peer))
		m.ckptStmgrLostLocked(c.container)
	}
	c.container = 0
}

// evictSilent removes the stream managers whose last heartbeat is older
// than the timeout and closes their connections, open or not.
func (m *manager) evictSilent(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for container, e := range m.stmgrs {
		silent := now.Sub(e.lastHeartbeat)
		if silent <= m.timeout {
			continue
		}
		delete(m.stmgrs, container)
		m.complete = false
		e.conn.container = 0
		reason := fmt.Sprintf("no heartbeat from the stream manager of container %d for %s (timeout %s)", container, silent, m.timeout)
		e.conn.close(reason)
		m.log.Warn("evicted silent stream manager", zap.Int("container", container), zap.String("peer", e.conn.peer),
			zap.Duration("silent", silent), zap.Duration("timeout", m.timeout))
		m.ckptStmgrLostLocked(container)
	}
}

// errConflict: the change needs every stream manager registered.
var errConflict = errors.New("conflict")

// setState activates or deactivates the topology. It is idempotent: the
// current state gives changed=false and no new version.
func (m *manager) setState(st egretpb.TopologyState) (version uint64, changed bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.requireCompleteLocked(); err != nil {
		return 0, false, err
	}
	if m.state == st {
		return m.version, false, nil
	}
	m.state = st
	m.publishLocked(m.buildLocked(), "state set to "+stateName(st))
	return m.version, true, nil
}

// updateRuntimeConfig merges kv into the plan's runtime config (an empty
// value deletes the key) and broadcasts a new version if anything changed.
func (m *manager) updateRuntimeConfig(kv map[string]string) (version uint64, cfg map[string]string, changed bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.requireCompleteLocked(); err != nil {
		return 0, nil, false, err
	}
	next := maps.Clone(m.runtimeConfig)
	for k, v := range kv {
		if v == "" {
			delete(next, k)
		} else {
			next[k] = v
		}
	}
	if len(next) > maxRuntimeConfigKeys {
		return 0, nil, false, fmt.Errorf("runtime config would hold %d keys, limit %d", len(next), maxRuntimeConfigKeys)
	}
	if !maps.Equal(next, m.runtimeConfig) {
		m.runtimeConfig = next
		changed = true
		m.publishLocked(m.buildLocked(), "runtime config updated")
	}
	return m.version, maps.Clone(m.runtimeConfig), changed, nil
}

func (m *manager) requireCompleteLocked() error {
	if m.complete {
		return nil
	}
	return fmt.Errorf("%w: topology %q is not running yet: stream managers of containers %v have not registered (registered: %v); retry when GET /healthz reports complete",
		errConflict, m.name, m.missingLocked(), sortedKeys(m.stmgrs))
}

// rebuildIfCompleteLocked builds and publishes a new plan if every
// container of the packing plan has a stream manager.
func (m *manager) rebuildIfCompleteLocked(reason string) {
	if m.allRegisteredLocked() {
		m.publishLocked(m.buildLocked(), reason)
	}
}

func (m *manager) allRegisteredLocked() bool {
	for c := range m.expected {
		if m.stmgrs[c] == nil {
			return false
		}
	}
	return true
}

func (m *manager) missingLocked() []int {
	var out []int
	for c := range m.expected {
		if m.stmgrs[c] == nil {
			out = append(out, c)
		}
	}
	sort.Ints(out)
	return out
}

// buildLocked makes the next physical plan version from the current state.
func (m *manager) buildLocked() *egretpb.PhysicalPlan {
	m.version++
	pp := &egretpb.PhysicalPlan{
		Topology:      topology.ToProto(m.topo),
		Packing:       m.packing.ToProto(),
		State:         m.state,
		Version:       m.version,
		RuntimeConfig: maps.Clone(m.runtimeConfig),
	}
	for _, c := range sortedKeys(m.stmgrs) {
		pp.Stmgrs = append(pp.Stmgrs, proto.Clone(m.stmgrs[c].loc).(*egretpb.StMgrLocation))
	}
	m.pplan = pp
	m.complete = true
	return pp
}

// publishLocked writes pp to /pplans/<name> and queues it on every
// registered stream manager connection.
func (m *manager) publishLocked(pp *egretpb.PhysicalPlan, reason string) {
	ctx, cancel := context.WithTimeout(m.ctx, stateWriteTimeout)
	err := m.store.SetPhysicalPlan(ctx, m.name, pp)
	cancel()
	if err != nil {
		// The stream managers still get the plan: data flow matters more
		// than the copy the tracker reads.
		m.log.Error("could not write the physical plan to the state manager", zap.Uint64("version", pp.GetVersion()), zap.Error(err))
	}
	frame := encode(&egretpb.NewPhysicalPlan{Pplan: pp}, m.log)
	for _, c := range sortedKeys(m.stmgrs) {
		m.stmgrs[c].conn.send(frame)
	}
	m.log.Info("physical plan broadcast", zap.Uint64("version", pp.GetVersion()), zap.String("state", stateName(pp.GetState())),
		zap.Int("stmgrs", len(m.stmgrs)), zap.String("reason", reason))
}

// snapshot is a consistent copy of the manager's view for the HTTP API.
type snapshot struct {
	pplan      *egretpb.PhysicalPlan
	complete   bool
	registered []int
	expected   []int
	state      egretpb.TopologyState
	version    uint64
	topo       *topology.Topology
	layout     *plan.Layout
}

func (m *manager) snapshot() snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return snapshot{
		pplan: m.pplan, complete: m.complete, registered: sortedKeys(m.stmgrs), expected: sortedKeys(m.expected),
		state: m.state, version: m.version, topo: m.topo, layout: m.packing.Layout(),
	}
}

// closeAll closes every stream manager connection (at shutdown).
func (m *manager) closeAll(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopping = true
	if m.ckpt.sp != nil {
		m.endSavepointLocked(errors.New("the topology manager is stopping"), 0)
	}
	for _, e := range m.stmgrs {
		e.conn.close(reason)
	}
}

func stateName(st egretpb.TopologyState) string {
	return strings.TrimPrefix(st.String(), "TOPOLOGY_STATE_")
}

func sortedKeys[V any](m map[int]V) []int {
	return slices.Sorted(maps.Keys(m))
}

// encode frames a control message; messages this package builds always
// encode, so a failure is only logged.
func encode(msg proto.Message, log *zap.Logger) []byte {
	b, err := wire.AppendMessage(nil, msg)
	if err != nil {
		log.Error("encode control frame", zap.Error(err))
		return nil
	}
	return b
}
