package metricsmgr

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/egretpb"
)

// SinkLoader creates an external metrics sink by name: the plugin binary
// egret-metricssink-<name> in the plugin directory (plugins.Loader).
type SinkLoader interface {
	LoadMetricsSink(ctx context.Context, name string, cfg spi.Config) (spi.MetricsSink, error)
}

// Bounds of a plugin sink.
const (
	// pluginBatch is the most reports one Report call carries.
	pluginBatch = 256
	// pluginReportTimeout bounds one Report call: a plugin that hangs
	// loses the batch, not the sink.
	pluginReportTimeout = 10 * time.Second
	// pluginLoadTimeout bounds a plugin's start and configuration.
	pluginLoadTimeout = time.Minute
)

// pluginSink feeds an external spi.MetricsSink. Reports wait in a bounded
// queue (sinkQueue) and go out in batches of what is queued; a failed
// batch is dropped and counted, never retried. A plugin that cannot be
// started, or that dies, is started again with backoff; reports arriving
// meanwhile queue, then are dropped once the queue is full.
type pluginSink struct {
	sinkName string
	loader   SinkLoader
	cfg      spi.Config
	log      *zap.Logger
	ch       reportQueue

	delivered, failed, starts atomic.Int64
}

func newPluginSink(name string, loader SinkLoader, cfg spi.Config, log *zap.Logger) *pluginSink {
	return &pluginSink{sinkName: name, loader: loader, cfg: cfg, log: log, ch: newReportQueue()}
}

func (s *pluginSink) offer(m *egretpb.MetricsPublish) bool { return s.ch.offer(m) }

func (s *pluginSink) name() string { return s.sinkName }

func (s *pluginSink) run(ctx context.Context) {
	for attempt := 0; ctx.Err() == nil; {
		sink, err := s.load(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Error("cannot start the metrics sink plugin; retrying", zap.Error(err))
			if !sleep(ctx, backoff(attempt)) {
				return
			}
			attempt++
			continue
		}
		s.starts.Add(1)
		attempt = 0
		err = s.feed(ctx, sink)
		if cerr := sink.Close(); cerr != nil && err == nil && ctx.Err() == nil {
			s.log.Warn("closing the metrics sink plugin", zap.Error(cerr))
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Error("metrics sink plugin failed; starting it again", zap.Error(err))
	}
}

func (s *pluginSink) load(ctx context.Context) (spi.MetricsSink, error) {
	lctx, cancel := context.WithTimeout(ctx, pluginLoadTimeout)
	defer cancel()
	return s.loader.LoadMetricsSink(lctx, s.sinkName, s.cfg)
}

// feed reports batches to sink until ctx ends, the sink is closed, or
// maxFailures batches in a row failed (a plugin that died or hangs: it is
// started again). The error says why.
func (s *pluginSink) feed(ctx context.Context, sink spi.MetricsSink) error {
	batch := make([]*egretpb.MetricsPublish, 0, pluginBatch)
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m := <-s.ch:
			batch = append(batch[:0], m)
		}
	fill:
		for len(batch) < pluginBatch {
			select {
			case m := <-s.ch:
				batch = append(batch, m)
			default:
				break fill
			}
		}
		rctx, cancel := context.WithTimeout(ctx, pluginReportTimeout)
		err := sink.Report(rctx, batch)
		cancel()
		if err == nil {
			s.delivered.Add(int64(len(batch)))
			failures = 0
			continue
		}
		s.failed.Add(int64(len(batch)))
		clear(batch)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if failures++; failures >= maxFailures || errors.Is(err, spi.ErrClosed) {
			return err
		}
		s.log.Warn("metrics sink plugin failed a batch; dropped", zap.Error(err))
	}
}

// maxFailures is how many batches in a row may fail before a plugin sink
// is started again.
const maxFailures = 3

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
