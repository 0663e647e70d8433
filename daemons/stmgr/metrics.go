package stmgr

import (
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/egret-stream/egret/daemons/acking"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

type counters struct {
	fromInstancesTuples, fromInstancesBytes atomic.Int64
	fromPeersTuples, fromPeersBytes         atomic.Int64
	toInstancesTuples, toInstancesBytes     atomic.Int64
	toPeersTuples, toPeersBytes             atomic.Int64
	lost, unroutable                        atomic.Int64
	rejected                                atomic.Int64
	registrations                           atomic.Int64
	instancesConnected, peersConnected      atomic.Int64
	planVersion                             atomic.Uint64
	lastUnroutableLog                       atomic.Int64
	// At-least-once: updates read (from instances and peers), forwarded
	// to peers, and dropped for lack of a ledger; results sent to and
	// lost toward spout instances.
	ackUpdatesIn, ackUpdatesForwarded, ackUnroutable atomic.Int64
	ackResultsOut, ackResultsLost                    atomic.Int64
	lastAckUnroutableLog                             atomic.Int64
	// droppedBackPressure counts the tuples of local spouts dropped in
	// drop mode while back pressure was on.
	droppedBackPressure atomic.Int64
}

// Counters is a snapshot of a stream manager's counters. Tuples and bytes
// are counted per frame header, never by decoding records; bytes include
// the frame headers.
type Counters struct {
	TuplesFromInstances, BytesFromInstances int64
	TuplesFromPeers, BytesFromPeers         int64
	// TuplesToInstances and TuplesToPeers count tuples written to the
	// connections.
	TuplesToInstances, BytesToInstances int64
	TuplesToPeers, BytesToPeers         int64
	// TuplesLost counts tuples dropped: toward a destination that was
	// disconnected while its queue was full, for a task not in the plan
	// (also in TuplesUnroutable), or queued when a destination left the
	// plan or its connection failed mid-write.
	TuplesLost, TuplesUnroutable int64
	// QueueBytes is what every destination queue holds now.
	QueueBytes int64
	// ConnectionsRejected counts connections closed for a protocol error:
	// garbage, an oversized or unknown frame, a failed handshake.
	ConnectionsRejected int64
	// TManagerRegistrations counts successful registrations.
	TManagerRegistrations int64
	InstancesConnected    int
	PeersConnected        int
	PlanVersion           uint64
	// Instances and Peers are per destination, by task id and by
	// container id.
	Instances map[int]DestCounters
	Peers     map[int]DestCounters
	// BackPressure is the back pressure state and time spent per cause.
	BackPressure BackPressureCounters
	// Acking sums the ledgers of the local spout tasks (at-least-once).
	Acking AckingCounters
	// TuplesDroppedBackPressure counts the tuples of local spouts dropped
	// while back pressure was on (topology.droptuples.upon.backpressure).
	TuplesDroppedBackPressure int64
}

// AckingCounters are a stream manager's at-least-once counters.
type AckingCounters struct {
	acking.AckerStats
	// UpdatesIn counts acking updates read from instances and peers;
	// UpdatesForwarded those sent on to the stream manager of their
	// root's container; UpdatesUnroutable those no ledger could take.
	UpdatesIn, UpdatesForwarded, UpdatesUnroutable int64
	// ResultsOut counts results queued toward spout instances;
	// ResultsLost those dropped (instance gone and its queue full).
	ResultsOut, ResultsLost int64
}

// DestCounters are the counters of one destination.
type DestCounters struct {
	Tuples, Bytes, Lost int64
	QueueBytes          int64
	Connected           bool
	// Addr is a peer's address while connected.
	Addr string
}

func (d *dest) snapshot(connected bool) DestCounters {
	return DestCounters{Tuples: d.tuples.Load(), Bytes: d.bytes.Load(), Lost: d.lost.Load(), QueueBytes: int64(d.q.Bytes()), Connected: connected}
}

// Counters returns a snapshot of the counters.
func (s *StMgr) Counters() Counters {
	c := Counters{
		TuplesFromInstances:       s.c.fromInstancesTuples.Load(),
		BytesFromInstances:        s.c.fromInstancesBytes.Load(),
		TuplesFromPeers:           s.c.fromPeersTuples.Load(),
		BytesFromPeers:            s.c.fromPeersBytes.Load(),
		TuplesToInstances:         s.c.toInstancesTuples.Load(),
		BytesToInstances:          s.c.toInstancesBytes.Load(),
		TuplesToPeers:             s.c.toPeersTuples.Load(),
		BytesToPeers:              s.c.toPeersBytes.Load(),
		TuplesLost:                s.c.lost.Load(),
		TuplesUnroutable:          s.c.unroutable.Load(),
		ConnectionsRejected:       s.c.rejected.Load(),
		TManagerRegistrations:     s.c.registrations.Load(),
		InstancesConnected:        int(s.c.instancesConnected.Load()),
		PeersConnected:            int(s.c.peersConnected.Load()),
		PlanVersion:               s.c.planVersion.Load(),
		Instances:                 map[int]DestCounters{},
		Peers:                     map[int]DestCounters{},
		BackPressure:              s.bp.snapshot(time.Now()),
		TuplesDroppedBackPressure: s.c.droppedBackPressure.Load(),
		Acking: AckingCounters{
			AckerStats:        s.ackStats(),
			UpdatesIn:         s.c.ackUpdatesIn.Load(),
			UpdatesForwarded:  s.c.ackUpdatesForwarded.Load(),
			UpdatesUnroutable: s.c.ackUnroutable.Load(),
			ResultsOut:        s.c.ackResultsOut.Load(),
			ResultsLost:       s.c.ackResultsLost.Load(),
		},
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, td := range s.tasks {
		d := td.snapshot(td.conn != nil)
		c.Instances[int(id)] = d
		c.QueueBytes += d.QueueBytes
	}
	for id, p := range s.peers {
		d := p.snapshot(p.connected.Load())
		d.Addr = p.connectedTo()
		c.Peers[int(id)] = d
		c.QueueBytes += d.QueueBytes
	}
	return c
}

// Metric names published to the metrics manager (source "stmgr").
// Per-destination metrics are named stmgr.instance.<task>.<name> and
// stmgr.peer.<container>.<name>.
const (
	MetricTuplesFromInstances = "stmgr.tuples.from.instances"
	MetricBytesFromInstances  = "stmgr.bytes.from.instances"
	MetricTuplesFromPeers     = "stmgr.tuples.from.peers"
	MetricBytesFromPeers      = "stmgr.bytes.from.peers"
	MetricTuplesToInstances   = "stmgr.tuples.to.instances"
	MetricBytesToInstances    = "stmgr.bytes.to.instances"
	MetricTuplesToPeers       = "stmgr.tuples.to.peers"
	MetricBytesToPeers        = "stmgr.bytes.to.peers"
	MetricTuplesLost          = "stmgr.tuples.lost"
	MetricTuplesUnroutable    = "stmgr.tuples.unroutable"
	MetricQueueBytes          = "stmgr.queue.bytes"
	MetricConnectionsRejected = "stmgr.connections.rejected"
	MetricInstancesConnected  = "stmgr.instances.connected"
	MetricPeersConnected      = "stmgr.peers.connected"

	// Back pressure: whether the local spouts are not read now (0 or 1),
	// and the cumulative nanoseconds spent with each cause active.
	MetricBackPressureActive          = "stmgr.backpressure.active"
	MetricBackPressureByLocalInstance = "stmgr.backpressure.time.by.local.instance.ns"
	MetricBackPressureByRemoteStMgr   = "stmgr.backpressure.time.by.remote.stmgr.ns"
	MetricBackPressureAnnounced       = "stmgr.backpressure.time.announced.by.peers.ns"
	MetricBackPressureThrottled       = "stmgr.backpressure.time.throttled.ns"
	// MetricTuplesDroppedBackPressure counts what drop mode dropped.
	MetricTuplesDroppedBackPressure = "stmgr.backpressure.tuples.dropped"

	// At-least-once: the ledgers of the local spout tasks.
	MetricAckRootsRegistered   = "stmgr.ack.roots.registered"
	MetricAckRootsAcked        = "stmgr.ack.roots.acked"
	MetricAckRootsFailed       = "stmgr.ack.roots.failed"
	MetricAckRootsRefused      = "stmgr.ack.roots.refused"
	MetricAckRootsExpired      = "stmgr.ack.roots.expired"
	MetricAckRootsPending      = "stmgr.ack.roots.pending"
	MetricAckUpdatesIn         = "stmgr.ack.updates.in"
	MetricAckUpdatesUnknown    = "stmgr.ack.updates.unknown"
	MetricAckUpdatesForwarded  = "stmgr.ack.updates.forwarded"
	MetricAckUpdatesUnroutable = "stmgr.ack.updates.unroutable"
	MetricAckResultsOut        = "stmgr.ack.results.out"
	MetricAckResultsLost       = "stmgr.ack.results.lost"
)

func (s *StMgr) metricsMessage() *egretpb.MetricsPublish {
	c := s.Counters()
	m := &egretpb.MetricsPublish{Source: "stmgr", Container: int32(s.cfg.Container)}
	add := func(name string, v float64) {
		m.Metrics = append(m.Metrics, &egretpb.Metric{Name: name, Value: v})
	}
	add(MetricTuplesFromInstances, float64(c.TuplesFromInstances))
	add(MetricBytesFromInstances, float64(c.BytesFromInstances))
	add(MetricTuplesFromPeers, float64(c.TuplesFromPeers))
	add(MetricBytesFromPeers, float64(c.BytesFromPeers))
	add(MetricTuplesToInstances, float64(c.TuplesToInstances))
	add(MetricBytesToInstances, float64(c.BytesToInstances))
	add(MetricTuplesToPeers, float64(c.TuplesToPeers))
	add(MetricBytesToPeers, float64(c.BytesToPeers))
	add(MetricTuplesLost, float64(c.TuplesLost))
	add(MetricTuplesUnroutable, float64(c.TuplesUnroutable))
	add(MetricQueueBytes, float64(c.QueueBytes))
	add(MetricConnectionsRejected, float64(c.ConnectionsRejected))
	add(MetricInstancesConnected, float64(c.InstancesConnected))
	add(MetricPeersConnected, float64(c.PeersConnected))
	active := 0.0
	if c.BackPressure.Active {
		active = 1
	}
	add(MetricBackPressureActive, active)
	add(MetricBackPressureByLocalInstance, float64(c.BackPressure.ByLocalInstanceNs))
	add(MetricBackPressureByRemoteStMgr, float64(c.BackPressure.ByRemoteStMgrNs))
	add(MetricBackPressureAnnounced, float64(c.BackPressure.AnnouncedByPeersNs))
	add(MetricBackPressureThrottled, float64(c.BackPressure.ThrottledNs))
	add(MetricTuplesDroppedBackPressure, float64(c.TuplesDroppedBackPressure))
	a := c.Acking
	add(MetricAckRootsRegistered, float64(a.Registered))
	add(MetricAckRootsAcked, float64(a.Acked))
	add(MetricAckRootsFailed, float64(a.Failed))
	add(MetricAckRootsRefused, float64(a.Refused))
	add(MetricAckRootsExpired, float64(a.Expired))
	add(MetricAckRootsPending, float64(a.Pending))
	add(MetricAckUpdatesIn, float64(a.UpdatesIn))
	add(MetricAckUpdatesUnknown, float64(a.Unknown))
	add(MetricAckUpdatesForwarded, float64(a.UpdatesForwarded))
	add(MetricAckUpdatesUnroutable, float64(a.UpdatesUnroutable))
	add(MetricAckResultsOut, float64(a.ResultsOut))
	add(MetricAckResultsLost, float64(a.ResultsLost))
	perDest := func(kind string, ds map[int]DestCounters) {
		ids := make([]int, 0, len(ds))
		for id := range ds {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		for _, id := range ids {
			d := ds[id]
			p := fmt.Sprintf("stmgr.%s.%d.", kind, id)
			add(p+"tuples.out", float64(d.Tuples))
			add(p+"bytes.out", float64(d.Bytes))
			add(p+"tuples.lost", float64(d.Lost))
			add(p+"queue.bytes", float64(d.QueueBytes))
		}
	}
	perDest("instance", c.Instances)
	perDest("peer", c.Peers)
	if s.eo.on.Load() {
		add(MetricCheckpointEpoch, float64(s.eo.epoch.Load()))
		add(MetricCheckpointAlignmentsAborted, float64(s.eo.aborted.Load()))
		add(MetricCheckpointFramesFenced, float64(s.eo.fenced.Load()))
		add(MetricCheckpointTuplesHeld, float64(s.eo.held.Load()))
		add(MetricCheckpointStatesStored, float64(s.eo.stored.Load()))
		add(MetricCheckpointStoreFailures, float64(s.eo.storeFailed.Load()))
		add(MetricCheckpointRestores, float64(s.eo.restores.Load()))
	}
	m.Metrics = append(m.Metrics, wire.ProcessMetrics()...)
	return m
}
