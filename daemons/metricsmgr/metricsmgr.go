package metricsmgr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Config configures a metrics manager.
type Config struct {
	TopologyName string
	Container    int
	// Socket is the Unix socket path local processes publish to.
	Socket string
	// Sinks are the sinks fed (SinkFile, SinkTManager; see
	// SinksFromConfig); none: reports are received and counted only.
	Sinks []string
	// FilePath is the file sink's path (required by the file sink).
	FilePath string
	// FileMaxBytes is the size at which the file sink rotates its file
	// (default 64 MiB) and FileMaxFiles how many rotated files it keeps
	// (FilePath+".1" ...; default 1).
	FileMaxBytes int64
	FileMaxFiles int
	// StateManager locates the topology manager for the tmanager sink
	// (required by it).
	StateManager spi.StateManager
	// PrometheusAddr is the host:port the prometheus sink serves /metrics
	// on (port 0: any); PrometheusTargetsFile, when set, receives the bound
	// address in Prometheus' file_sd format.
	PrometheusAddr        string
	PrometheusTargetsFile string
	// GraphiteAddr is the host:port of the graphite sink's line receiver;
	// GraphitePrefix starts every path (default "egret").
	GraphiteAddr   string
	GraphitePrefix string
	// SinkLoader starts the external sinks: every name of Sinks that is not
	// a built-in sink (required when there is one). SinkConfig is the
	// config they are configured with (the cluster config).
	SinkLoader SinkLoader
	SinkConfig spi.Config
	// ReportInterval is how often the metrics manager reports its own
	// counters and process metrics to its sinks (source "metricsmgr");
	// 0: never.
	ReportInterval time.Duration
	// MaxFrame bounds an accepted frame (default wire.DefaultMaxFrame).
	MaxFrame int
	// Ready, when set, is called once the socket listens.
	Ready func()

	stats *Stats // counters to use (tests read them while it runs)
}

// Stats are the metrics manager's counters.
type Stats struct {
	Received atomic.Int64 // reports received
	Dropped  atomic.Int64 // reports a sink could not take (all sinks)
	BadConns atomic.Int64 // connections closed for protocol errors
}

// sinkCounters are one sink's counters, published by the metrics manager
// as metricsmgr.sink.<name>.*.
type sinkCounters struct {
	dropped atomic.Int64 // reports its full queue could not take
}

// sink consumes reports.
type sink interface {
	name() string
	// offer hands a report to the sink without blocking; false if dropped.
	offer(m *egretpb.MetricsPublish) bool
	run(ctx context.Context)
}

// Run serves until ctx ends.
func Run(ctx context.Context, cfg Config, log *zap.Logger) error {
	_, err := run(ctx, cfg, log)
	return err
}

func run(ctx context.Context, cfg Config, log *zap.Logger) (*Stats, error) {
	if cfg.Socket == "" {
		return nil, errors.New("metricsmgr: a socket path is required")
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = wire.DefaultMaxFrame
	}
	sinks, err := newSinks(cfg, log)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(cfg.Socket)
	ln, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		closeSinks(sinks)
		return nil, fmt.Errorf("metricsmgr: listen on %s: %w", cfg.Socket, err)
	}
	defer os.Remove(cfg.Socket)
	stats := cfg.stats
	if stats == nil {
		stats = &Stats{}
	}
	counters := make([]sinkCounters, len(sinks))
	var wg sync.WaitGroup
	for _, s := range sinks {
		wg.Add(1)
		go func(s sink) { defer wg.Done(); s.run(ctx) }(s)
	}
	if cfg.ReportInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reportSelf(ctx, cfg, sinks, counters, stats)
		}()
	}
	go func() { <-ctx.Done(); ln.Close() }()
	slots := make(chan struct{}, maxConns)
	if cfg.Ready != nil {
		cfg.Ready()
	}
	log.Info("metrics manager listening", zap.String("socket", cfg.Socket), zap.Int("container", cfg.Container), zap.Strings("sinks", cfg.Sinks))
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			log.Warn("accept failed", zap.Error(err))
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			stats.BadConns.Add(1)
			log.Error("too many publisher connections; closing the new one", zap.Int("limit", maxConns))
			conn.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			serve(ctx, conn, cfg, sinks, counters, stats, log)
		}()
	}
	wg.Wait()
	return stats, nil
}

func serve(ctx context.Context, conn net.Conn, cfg Config, sinks []sink, counters []sinkCounters, stats *Stats, log *zap.Logger) {
	defer conn.Close()
	go func() { <-ctx.Done(); conn.Close() }()
	r := bufio.NewReader(conn)
	var buf []byte
	for {
		// A publisher reports at least once per export interval; a silent
		// connection is closed rather than held forever.
		_ = conn.SetReadDeadline(time.Now().Add(idleTimeout))
		t, payload, nb, err := wire.ReadFrame(r, buf, cfg.MaxFrame)
		buf = nb
		if err != nil {
			if !isClosed(err) && ctx.Err() == nil {
				stats.BadConns.Add(1)
				log.Error("closing publisher connection", zap.Error(err))
			}
			return
		}
		if t != wire.FrameMetricsPublish {
			stats.BadConns.Add(1)
			log.Error("closing publisher connection: unexpected frame", zap.Stringer("type", t))
			return
		}
		m, err := wire.DecodeMessage(t, payload)
		if err != nil {
			stats.BadConns.Add(1)
			log.Error("closing publisher connection", zap.Error(err))
			return
		}
		mp := m.(*egretpb.MetricsPublish)
		if mp.Container == 0 {
			mp.Container = int32(cfg.Container)
		}
		stats.Received.Add(1)
		deliver(mp, sinks, counters, stats)
	}
}

// deliver offers m to every sink, counting what a full queue drops.
func deliver(m *egretpb.MetricsPublish, sinks []sink, counters []sinkCounters, stats *Stats) {
	for i, s := range sinks {
		if !s.offer(m) {
			counters[i].dropped.Add(1)
			stats.Dropped.Add(1)
		}
	}
}

// reportSelf hands the sinks the metrics manager's own report every
// cfg.ReportInterval: metricsmgr.received, metricsmgr.dropped, per sink
// metricsmgr.sink.<name>.dropped (and, for a plugin sink, .delivered,
// .failed and .starts), and the process metrics.
func reportSelf(ctx context.Context, cfg Config, sinks []sink, counters []sinkCounters, stats *Stats) {
	t := time.NewTicker(cfg.ReportInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m := &egretpb.MetricsPublish{Source: "metricsmgr", Container: int32(cfg.Container), UnixNanos: time.Now().UnixNano()}
		add := func(name string, v int64) {
			m.Metrics = append(m.Metrics, &egretpb.Metric{Name: name, Value: float64(v)})
		}
		add("metricsmgr.received", stats.Received.Load())
		add("metricsmgr.dropped", stats.Dropped.Load())
		for i, s := range sinks {
			prefix := "metricsmgr.sink." + s.name() + "."
			add(prefix+"dropped", counters[i].dropped.Load())
			if p, ok := s.(*pluginSink); ok {
				add(prefix+"delivered", p.delivered.Load())
				add(prefix+"failed", p.failed.Load())
				add(prefix+"starts", p.starts.Load())
			}
		}
		m.Metrics = append(m.Metrics, wire.ProcessMetrics()...)
		deliver(m, sinks, counters, stats)
	}
}

func isClosed(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.EOF)
}

// Bounds of the publisher connections.
const (
	maxConns    = 1024
	idleTimeout = 5 * time.Minute
)

// backoff returns the delay before the attempt-th retry.
func backoff(attempt int) time.Duration {
	d := 100 * time.Millisecond << min(attempt, 5)
	return min(d, 3*time.Second)
}
