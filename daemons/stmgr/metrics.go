package stmgr

import (
	"fmt"
	"sort"
	"sync/atomic"
	"time"

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
		TuplesFromInstances:   s.c.fromInstancesTuples.Load(),
		BytesFromInstances:    s.c.fromInstancesBytes.Load(),
		TuplesFromPeers:       s.c.fromPeersTuples.Load(),
		BytesFromPeers:        s.c.fromPeersBytes.Load(),
		TuplesToInstances:     s.c.toInstancesTuples.Load(),
		BytesToInstances:      s.c.toInstancesBytes.Load(),
		TuplesToPeers:         s.c.toPeersTuples.Load(),
		BytesToPeers:          s.c.toPeersBytes.Load(),
		TuplesLost:            s.c.lost.Load(),
		TuplesUnroutable:      s.c.unroutable.Load(),
		ConnectionsRejected:   s.c.rejected.Load(),
		TManagerRegistrations: s.c.registrations.Load(),
		InstancesConnected:    int(s.c.instancesConnected.Load()),
		PeersConnected:        int(s.c.peersConnected.Load()),
		PlanVersion:           s.c.planVersion.Load(),
		Instances:             map[int]DestCounters{},
		Peers:                 map[int]DestCounters{},
		BackPressure:          s.bp.snapshot(time.Now()),
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
	m.Metrics = append(m.Metrics, wire.ProcessMetrics()...)
	return m
}
