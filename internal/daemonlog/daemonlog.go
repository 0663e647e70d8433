// Package daemonlog is the one log format of every process of a running
// topology: the daemons (executor, topology manager, stream manager,
// metrics manager, ...) and the instances (a topology binary in instance
// or container mode) all write zap's production JSON lines, one object a
// line with ts (Unix seconds), level, logger, caller and msg, so that one
// reader (the tracker, egret logs, a log shipper) parses every log file.
package daemonlog

import (
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a logger writing JSON lines to w at level. Like zap's
// production logger it samples (after 100 identical messages a second,
// one in 100) and adds the caller; it adds no stack traces (a peer
// sending garbage must not multiply the log volume).
func New(w io.Writer, level zap.AtomicLevel) *zap.Logger {
	ws := zapcore.Lock(zapcore.AddSync(w))
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), ws, level)
	core = zapcore.NewSamplerWithOptions(core, time.Second, 100, 100)
	return zap.New(core, zap.AddCaller(), zap.ErrorOutput(ws))
}
