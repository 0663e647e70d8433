package plugins_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/metricsmgr"
	"github.com/egret-stream/egret/daemons/metricsmgr/metricssinktest"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/plugins/internal/fakes"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/proto/egretpb"
)

// jsonlSuite is the conformance suite over JSONLines sinks writing to one
// file, read back as the destination.
func jsonlSuite(t *testing.T, open func(ctx context.Context, cfg spi.Config) (spi.MetricsSink, error)) metricssinktest.Suite {
	path := filepath.Join(t.TempDir(), "reports.jsonl")
	cfg := spi.Config{fakes.KeyJSONLinesPath: path}
	return metricssinktest.Suite{
		Open: func(ctx context.Context) (spi.MetricsSink, error) { return open(ctx, cfg) },
		Delivered: func(context.Context) ([]*egretpb.MetricsPublish, error) {
			return fakes.ReadJSONLines(path)
		},
	}
}

// The metrics sink conformance suite, with delivery checked, against the
// implementation itself, across an in-process plugin connection, and
// across a plugin process.
func TestMetricsSinkConformance(t *testing.T) {
	t.Run("Direct", func(t *testing.T) {
		jsonlSuite(t, func(_ context.Context, cfg spi.Config) (spi.MetricsSink, error) {
			return fakes.NewJSONLines(cfg, nil)
		}).Run(t)
	})
	t.Run("InProcess", func(t *testing.T) {
		jsonlSuite(t, func(_ context.Context, cfg spi.Config) (spi.MetricsSink, error) {
			return plugintest.MetricsSink(t, fakes.NewJSONLines, cfg), nil
		}).Run(t)
	})
	t.Run("Plugin", func(t *testing.T) {
		dir := t.TempDir()
		plugintest.Install(t, dir, spi.KindMetricsSink, "jsonl", plugintest.Build(t, sinkPlugin))
		l := plugintest.NewLoader(t, dir)
		jsonlSuite(t, func(ctx context.Context, cfg spi.Config) (spi.MetricsSink, error) {
			return l.LoadMetricsSink(ctx, "jsonl", cfg)
		}).Run(t)
	})
}

// A metrics sink plugin's Configure error and its kind reach the host.
func TestMetricsSinkPluginErrors(t *testing.T) {
	dir := t.TempDir()
	bin := plugintest.Build(t, sinkPlugin)
	plugintest.Install(t, dir, spi.KindMetricsSink, "jsonl", bin)
	l := plugintest.NewLoader(t, dir)
	if _, err := l.LoadMetricsSink(testCtx(t), "jsonl", spi.Config{}); err == nil || !strings.Contains(err.Error(), fakes.KeyJSONLinesPath+" is not set") {
		t.Fatalf("load without its path: %v", err)
	}
	kind, err := l.Kind(testCtx(t), bin)
	if err != nil || kind != spi.KindMetricsSink {
		t.Fatalf("Kind = %q, %v; want %q", kind, err, spi.KindMetricsSink)
	}
	if _, err := l.LoadMetricsSink(testCtx(t), "nosuch", spi.Config{}); err == nil || !strings.Contains(err.Error(), "egret-metricssink-nosuch") {
		t.Fatalf("load of a missing plugin: %v", err)
	}
}

// A metrics manager feeds a sink plugin process with what its publishers
// send, and starts the plugin again when it dies: the plugin exits after
// every 20 reports, and reports keep arriving from new processes, with the
// metrics manager's own counters among them.
func TestMetricsManagerFeedsASinkPlugin(t *testing.T) {
	dir := t.TempDir()
	plugintest.Install(t, dir, spi.KindMetricsSink, "jsonl", plugintest.Build(t, sinkPlugin))
	l := plugintest.NewLoader(t, dir)
	path := filepath.Join(t.TempDir(), "reports.jsonl")
	socket := filepath.Join(t.TempDir(), "m.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- metricsmgr.Run(ctx, metricsmgr.Config{
			TopologyName: "wc", Container: 1, Socket: socket, Sinks: []string{"jsonl"},
			SinkLoader: l, SinkConfig: spi.Config{fakes.KeyJSONLinesPath: path, fakes.KeyJSONLinesExitAfter: "20"},
			ReportInterval: 50 * time.Millisecond,
		}, zaptest.NewLogger(t))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("metrics manager: %v", err)
		}
	})
	var n atomic.Int64
	go wire.PublishMetrics(ctx, socket, 10*time.Millisecond, func() *egretpb.MetricsPublish {
		return &egretpb.MetricsPublish{Source: "instance", Component: "split", TaskId: 3,
			Metrics: []*egretpb.Metric{{Name: "instance.executed", Value: float64(n.Add(1))}}}
	}, zaptest.NewLogger(t))

	var last []*egretpb.MetricsPublish
	ok := eventually(60*time.Second, func() bool {
		got, err := fakes.ReadJSONLines(path)
		if err != nil {
			return false
		}
		last = got
		var instance, starts int
		for _, m := range got {
			switch m.GetSource() {
			case "instance":
				instance++
			case "metricsmgr":
				for _, x := range m.GetMetrics() {
					if x.GetName() == "metricsmgr.sink.jsonl.starts" {
						starts = max(starts, int(x.GetValue()))
					}
				}
			}
		}
		return instance >= 100 && starts >= 3
	})
	if !ok {
		t.Fatalf("after 60s the sink holds %d reports; want 100 of the instance and a metrics manager that started the plugin 3 times", len(last))
	}
	var prev float64
	for _, m := range last {
		if m.GetSource() != "instance" {
			continue
		}
		if v := m.GetMetrics()[0].GetValue(); v <= prev {
			t.Fatalf("reports out of order: executed %v after %v", v, prev)
		} else {
			prev = v
		}
	}
}

func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
