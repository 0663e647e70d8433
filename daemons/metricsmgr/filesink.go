package metricsmgr

import (
	"context"
	"errors"

	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/egret-stream/egret/internal/logfile"
	"github.com/egret-stream/egret/proto/egretpb"
)

// fileSinkFrom is the file sink of cfg (--metrics-file).
func fileSinkFrom(cfg Config, log *zap.Logger) (sink, error) {
	if cfg.FilePath == "" {
		return nil, errors.New("the file sink needs a file path (--metrics-file)")
	}
	return newFileSink(cfg.FilePath, cfg.FileMaxBytes, cfg.FileMaxFiles, log), nil
}

// fileSink appends reports as JSON lines to a file rotated at its size
// cap, keeping files rotated copies.
type fileSink struct {
	path  string
	max   int64
	files int
	log   *zap.Logger
	ch    reportQueue
}

func newFileSink(path string, max int64, files int, log *zap.Logger) *fileSink {
	if max <= 0 {
		max = 64 << 20
	}
	if files <= 0 {
		files = 1
	}
	return &fileSink{path: path, max: max, files: files, log: log, ch: newReportQueue()}
}

func (s *fileSink) offer(m *egretpb.MetricsPublish) bool { return s.ch.offer(m) }

func (s *fileSink) name() string { return SinkFile }

func (s *fileSink) run(ctx context.Context) {
	var f *logfile.File
	defer func() {
		if f != nil {
			_ = f.Close()
		}
	}()
	// Lines are written in batches of whole lines, at most one file's
	// worth, so rotation never splits a line.
	maxBatch := int(min(s.max, 64<<10))
	var batch []byte
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.ch:
			if f == nil {
				var err error
				if f, err = logfile.Open(s.path, logfile.Limits{MaxSize: s.max, MaxFiles: s.files}, s.log); err != nil {
					s.log.Error("file sink cannot open its file; dropping reports", zap.String("path", s.path), zap.Error(err))
					continue
				}
			}
			line, err := protojson.Marshal(m)
			if err != nil {
				continue
			}
			if len(batch) > 0 && len(batch)+len(line)+1 > maxBatch {
				s.write(f, batch)
				batch = batch[:0]
			}
			batch = append(append(batch, line...), '\n')
			if len(s.ch) == 0 {
				s.write(f, batch)
				batch = batch[:0]
			}
		}
	}
}

func (s *fileSink) write(f *logfile.File, b []byte) {
	if _, err := f.Write(b); err != nil {
		s.log.Error("file sink cannot write its file", zap.String("path", s.path), zap.Error(err))
	}
}
