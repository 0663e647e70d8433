package kafka

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// zapLogger passes franz-go's log lines to zap, at the most verbose level
// the zap logger has enabled (franz-go then skips building the others).
type zapLogger struct{ l *zap.Logger }

func (z zapLogger) Level() kgo.LogLevel {
	switch {
	case z.l.Core().Enabled(zap.DebugLevel):
		return kgo.LogLevelDebug
	case z.l.Core().Enabled(zap.InfoLevel):
		return kgo.LogLevelInfo
	case z.l.Core().Enabled(zap.WarnLevel):
		return kgo.LogLevelWarn
	}
	return kgo.LogLevelError
}

func (z zapLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	fields := make([]zap.Field, 0, len(keyvals)/2)
	for i := 0; i+1 < len(keyvals); i += 2 {
		fields = append(fields, zap.Any(fmt.Sprint(keyvals[i]), keyvals[i+1]))
	}
	switch level {
	case kgo.LogLevelError:
		z.l.Error(msg, fields...)
	case kgo.LogLevelWarn:
		z.l.Warn(msg, fields...)
	case kgo.LogLevelInfo:
		z.l.Info(msg, fields...)
	default:
		z.l.Debug(msg, fields...)
	}
}

// commitResponseErr returns the first partition error of an offset
// commit response.
func commitResponseErr(resp *kmsg.OffsetCommitResponse) error {
	if resp == nil {
		return nil
	}
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				errs = append(errs, fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err))
			}
		}
	}
	return errors.Join(errs...)
}

// pollBuffered returns at most n of the records franz-go has fetched in
// the background, without waiting for more.
func pollBuffered(cl *kgo.Client, n int) kgo.Fetches {
	//lint:ignore SA1012 franz-go documents a nil context as "return what is buffered at once"
	return cl.PollRecords(nil, n)
}
