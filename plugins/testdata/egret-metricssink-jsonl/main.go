// Command egret-metricssink-jsonl serves a metrics sink that appends every
// report as a JSON line to egret.metrics.jsonl.path: the test plugin of
// the metrics sink kind (conformance across the plugin boundary, and the
// metrics manager's plugin sinks end to end).
package main

import (
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/plugins/internal/fakes"
)

func main() { plugins.ServeMetricsSink(fakes.NewJSONLines) }
