// Package metricsmgr is the metrics manager daemon: one per container. The
// container's processes (instances, stream manager, topology manager,
// shell)
// publish MetricsPublish frames to its Unix socket; it hands every report to
// the sinks the cluster config enables (egret.metrics.sinks, see
// SinksFromConfig; by default file and tmanager):
//
//   - file: one JSON object per line in a file rotated by size, keeping a
//     number of rotated files;
//   - tmanager: forwarded to the topology manager (found through the state
//     manager), which aggregates them for `egret metrics` and the tracker;
//   - prometheus: the latest report of every process of the container on a
//     scrape endpoint (GET /metrics; names from PromName), its address
//     written in file_sd format to prometheus-targets.json;
//   - graphite: plaintext lines to a carbon receiver, reconnecting;
//   - any other name: an external spi.MetricsSink, the plugin binary
//     egret-metricssink-<name> (see SinkLoader), fed in batches and started
//     again when it dies.
//
// With none, reports are read and dropped. A slow or absent sink never
// blocks publishers: each sink has a bounded queue and counts what it had
// to drop; the metrics manager reports those counts and its own process
// metrics to its sinks (source "metricsmgr").
package metricsmgr
