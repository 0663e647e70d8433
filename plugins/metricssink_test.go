package plugins_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/metricsmgr/metricssinktest"
	"github.com/egret-stream/egret/plugins"
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
		plugintest.Install(t, dir, plugins.KindMetricsSink, "jsonl", plugintest.Build(t, sinkPlugin))
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
	plugintest.Install(t, dir, plugins.KindMetricsSink, "jsonl", bin)
	l := plugintest.NewLoader(t, dir)
	if _, err := l.LoadMetricsSink(testCtx(t), "jsonl", spi.Config{}); err == nil || !strings.Contains(err.Error(), fakes.KeyJSONLinesPath+" is not set") {
		t.Fatalf("load without its path: %v", err)
	}
	kind, err := l.Kind(testCtx(t), bin)
	if err != nil || kind != plugins.KindMetricsSink {
		t.Fatalf("Kind = %q, %v; want %q", kind, err, plugins.KindMetricsSink)
	}
	if _, err := l.LoadMetricsSink(testCtx(t), "nosuch", spi.Config{}); err == nil || !strings.Contains(err.Error(), "egret-metricssink-nosuch") {
		t.Fatalf("load of a missing plugin: %v", err)
	}
}
