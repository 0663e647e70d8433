package spi

import (
	"context"

	"github.com/egret-stream/egret/proto/egretpb"
)

// MetricsSink is an external destination of the metrics manager's reports
// (issue 23): a backend selected by a name in egret.metrics.sinks that is
// not a built-in sink. It is configured with the cluster config like the
// other backends (see MetricsSinkFactory).
//
// Contract:
//   - Report and Close are called from one goroutine: the sink's own. An
//     implementation needs no locking of its own for them.
//   - Report may block. The metrics manager calls it behind the sink's
//     bounded queue, so a slow sink never blocks publishers: when the queue
//     is full, reports are dropped and counted.
//   - Report delivers a batch in order; reports of one source keep their
//     order across batches. An error is logged and counted by the caller
//     and the batch is dropped: it is never retried forever.
//   - Report honours ctx: a cancelled context ends the call with an error
//     wrapping ctx.Err().
//   - Close releases the sink and is idempotent; Report after Close fails
//     with an error wrapping ErrClosed.
type MetricsSink interface {
	Report(ctx context.Context, batch []*egretpb.MetricsPublish) error
	Close() error
}
