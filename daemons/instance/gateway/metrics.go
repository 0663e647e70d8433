package gateway

import (
	"sync/atomic"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Metric names published to the metrics manager (source "instance").
// User counters are published as "user.<name>".
const (
	MetricEmitted      = "instance.emitted"
	MetricSent         = "instance.sent"
	MetricExecuted     = "instance.executed"
	MetricExecuteNanos = "instance.execute.nanos"
	// MetricExecuteLatency and MetricCompleteLatency are histograms:
	// <name>.le.<bucket> per wire.LatencyBucketNames.
	MetricExecuteLatency  = "instance.execute.latency"
	MetricCompleteLatency = "instance.complete.latency"
	MetricNextTuples      = "instance.next.tuples"
	MetricBatches         = "instance.batches"
	MetricErrors          = "instance.errors"
	MetricDropped         = "instance.dropped"
	MetricTuplesIn        = "gateway.tuples.in"
	MetricTuplesOut       = "gateway.tuples.out"
	MetricTuplesLost      = "gateway.tuples.lost"
	MetricQueueBytes      = "gateway.out.queue.bytes"
	// MetricInQueueBytes is what inbound batches not yet consumed by the
	// instance hold.
	MetricInQueueBytes = "gateway.in.queue.bytes"
	MetricReconnects   = "gateway.registrations"
	// MetricReconfigurations counts live user-setting changes handed to
	// an api.Reconfigurable component.
	MetricReconfigurations = "instance.reconfigurations"
	// MetricRelayouts counts task layout changes (rescales) the instance
	// followed without a restart.
	MetricRelayouts = "instance.relayouts"
	// MetricHeldTuples is what a bolt holds outside Execute (api.Holder:
	// the tuples a shell bolt's subprocess has not finished).
	MetricHeldTuples = "instance.held.tuples"

	// At-least-once, spout tasks: roots acked, failed (by a bolt or the
	// ledger), timed out; the sum and count of complete latencies; roots
	// pending now.
	MetricAcked                = "instance.acked"
	MetricFailed               = "instance.failed"
	MetricTimedOut             = "instance.timed.out"
	MetricCompleteLatencyNanos = "instance.complete.latency.nanos"
	MetricCompleteLatencyCount = "instance.complete.latency.count"
	MetricPendingRoots         = "instance.pending.roots"
	// At-least-once, every task: ack and fail updates sent by a bolt, and
	// the gateway's acking traffic.
	MetricAckUpdates         = "instance.ack.updates"
	MetricAckUpdatesOut      = "gateway.ack.updates.out"
	MetricAckUpdatesLost     = "gateway.ack.updates.lost"
	MetricAckResultsReceived = "gateway.ack.results.in"

	// Effectively-once, every task: states saved at barriers, saves that
	// failed or were aborted, the size of the last state saved, restores.
	MetricCheckpoints        = "instance.checkpoints"
	MetricCheckpointFailures = "instance.checkpoint.failures"
	MetricCheckpointBytes    = "instance.checkpoint.bytes"
	MetricRestores           = "instance.restores"
	// The asynchronous part of the last checkpoint: its duration, its
	// full size, the bytes it uploaded (full minus what it shares with
	// earlier ones); the bytes uploaded since the instance started.
	MetricCheckpointAsyncNanos       = "instance.checkpoint.async.nanos"
	MetricCheckpointFullBytes        = "instance.checkpoint.full.bytes"
	MetricCheckpointIncrementalBytes = "instance.checkpoint.incremental.bytes"
	MetricCheckpointUploadedBytes    = "instance.checkpoint.uploaded.bytes"
	// MetricCheckpointSyncNanos is the synchronous part of the last
	// save, while the task does not process: PreSave, the encoding of
	// the operator states, the fork of the keyed state's snapshot.
	MetricCheckpointSyncNanos = "instance.checkpoint.sync.nanos"
)

// ackCounters count the gateway's acking traffic.
type ackCounters struct {
	updatesOut, updatesLost, resultsIn atomic.Int64
}

func (g *gateway) metricsMessage() *egretpb.MetricsPublish {
	im := g.cfg.Metrics
	m := &egretpb.MetricsPublish{Source: "instance", Container: int32(g.cfg.Container), Component: g.component, TaskId: int32(g.cfg.TaskID)}
	add := func(name string, v int64) {
		m.Metrics = append(m.Metrics, &egretpb.Metric{Name: name, Value: float64(v)})
	}
	add(MetricEmitted, im.Emitted.Load())
	add(MetricSent, im.Sent.Load())
	add(MetricExecuted, im.Executed.Load())
	add(MetricExecuteNanos, im.ExecuteNanos.Load())
	add(MetricNextTuples, im.NextTuples.Load())
	add(MetricBatches, im.Batches.Load())
	add(MetricErrors, im.Errors.Load())
	add(MetricDropped, im.Dropped.Load())
	add(MetricTuplesIn, g.stats.TuplesIn.Load())
	add(MetricTuplesOut, g.stats.TuplesOut.Load())
	add(MetricTuplesLost, g.stats.TuplesLost.Load())
	add(MetricQueueBytes, int64(g.out.Bytes()))
	add(MetricInQueueBytes, int64(g.in.bytes()))
	add(MetricReconnects, g.stats.Registrations.Load())
	add(MetricReconfigurations, im.Reconfigurations.Load())
	add(MetricRelayouts, im.Relayouts.Load())
	add(MetricHeldTuples, im.Held.Load())
	m.Metrics = im.ExecuteLatency.AppendMetrics(m.Metrics, MetricExecuteLatency)
	if g.effectivelyOnce {
		add(MetricCheckpoints, im.Checkpoints.Load())
		add(MetricCheckpointFailures, im.CheckpointFailures.Load())
		add(MetricCheckpointBytes, im.CheckpointBytes.Load())
		add(MetricRestores, im.Restores.Load())
		add(MetricCheckpointAsyncNanos, im.CheckpointAsyncNanos.Load())
		add(MetricCheckpointFullBytes, im.CheckpointFullBytes.Load())
		add(MetricCheckpointIncrementalBytes, im.CheckpointIncrementalBytes.Load())
		add(MetricCheckpointUploadedBytes, im.CheckpointUploadedBytes.Load())
		add(MetricCheckpointSyncNanos, im.CheckpointSyncNanos.Load())
	}
	if g.atLeastOnce {
		add(MetricAcked, im.Acked.Load())
		add(MetricFailed, im.Failed.Load())
		add(MetricTimedOut, im.TimedOut.Load())
		add(MetricCompleteLatencyNanos, im.CompleteLatencyNanos.Load())
		add(MetricCompleteLatencyCount, im.CompleteLatencyCount.Load())
		add(MetricPendingRoots, im.PendingRoots.Load())
		m.Metrics = im.CompleteLatency.AppendMetrics(m.Metrics, MetricCompleteLatency)
		add(MetricAckUpdates, im.AckUpdates.Load())
		add(MetricAckUpdatesOut, g.acks.updatesOut.Load())
		add(MetricAckUpdatesLost, g.acks.updatesLost.Load())
		add(MetricAckResultsReceived, g.acks.resultsIn.Load())
	}
	for _, name := range im.CounterNames() {
		add("user."+name, im.Counter(name).Value())
	}
	m.Metrics = append(m.Metrics, wire.ProcessMetrics()...)
	for _, e := range im.TakeExceptions() {
		m.Exceptions = append(m.Exceptions, &egretpb.ExceptionReport{Message: e.Message, Stack: e.Stack, UnixNanos: e.UnixNanos, Count: e.Count})
	}
	return m
}
