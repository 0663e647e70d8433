package fakes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"

	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Keys of the JSONLines metrics sink.
const (
	// KeyJSONLinesPath is the file the sink appends to (required).
	KeyJSONLinesPath = "egret.metrics.jsonl.path"
	// KeyJSONLinesExitAfter makes the plugin process exit (status 3) once
	// it has written that many reports: a sink plugin that dies.
	KeyJSONLinesExitAfter = "egret.metrics.jsonl.exit.after"
)

// JSONLines is a metrics sink that appends each report as one protojson
// line to a file.
type JSONLines struct {
	mu        sync.Mutex
	f         *os.File
	closed    bool
	written   int
	exitAfter int
}

// NewJSONLines is a spi.MetricsSinkFactory.
func NewJSONLines(cfg spi.Config, _ *zap.Logger) (spi.MetricsSink, error) {
	path := cfg.String(KeyJSONLinesPath, "")
	if path == "" {
		return nil, fmt.Errorf("%s is not set", KeyJSONLinesPath)
	}
	exitAfter, err := cfg.Int(KeyJSONLinesExitAfter, 0)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &JSONLines{f: f, exitAfter: exitAfter}, nil
}

// Report appends batch, one line per report, in one write.
func (s *JSONLines) Report(ctx context.Context, batch []*egretpb.MetricsPublish) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("jsonl sink: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("jsonl sink: %w", spi.ErrClosed)
	}
	var b bytes.Buffer
	for _, m := range batch {
		line, err := protojson.Marshal(m)
		if err != nil {
			return fmt.Errorf("jsonl sink: %w", err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if _, err := s.f.Write(b.Bytes()); err != nil {
		return fmt.Errorf("jsonl sink: %w", err)
	}
	s.written += len(batch)
	if s.exitAfter > 0 && s.written >= s.exitAfter {
		os.Exit(3)
	}
	return nil
}

// Close closes the file; a second Close does nothing.
func (s *JSONLines) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.f.Close()
}

// ReadJSONLines returns the reports a JSONLines sink wrote to path.
func ReadJSONLines(path string) ([]*egretpb.MetricsPublish, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*egretpb.MetricsPublish
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		m := &egretpb.MetricsPublish{}
		if err := protojson.Unmarshal(sc.Bytes(), m); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}
