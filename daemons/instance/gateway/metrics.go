package gateway

import (
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
	MetricNextTuples   = "instance.next.tuples"
	MetricBatches      = "instance.batches"
	MetricErrors       = "instance.errors"
	MetricDropped      = "instance.dropped"
	MetricTuplesIn     = "gateway.tuples.in"
	MetricTuplesOut    = "gateway.tuples.out"
	MetricTuplesLost   = "gateway.tuples.lost"
	MetricQueueBytes   = "gateway.out.queue.bytes"
	MetricReconnects   = "gateway.registrations"
)

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
	add(MetricReconnects, g.stats.Registrations.Load())
	for _, name := range im.CounterNames() {
		add("user."+name, im.Counter(name).Value())
	}
	m.Metrics = append(m.Metrics, wire.ProcessMetrics()...)
	return m
}
