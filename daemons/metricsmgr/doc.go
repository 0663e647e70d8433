// Package metricsmgr is the metrics manager daemon: one per container. The
// container's processes (instances, stream manager, topology manager)
// publish MetricsPublish frames to its Unix socket; it hands every report to
// the sinks the cluster config enables (egret.metrics.sinks, see
// SinksFromConfig; by default file and tmanager):
//
//   - file: one JSON object per line in a size-capped file (rotated once);
//   - tmanager: forwarded to the topology manager (found through the state
//     manager), which aggregates them for `egret metrics` and the tracker;
//   - prometheus: the latest report of every process of the container on a
//     scrape endpoint (GET /metrics; names from PromName), its address
//     written in file_sd format to prometheus-targets.json;
//   - graphite: plaintext lines to a carbon receiver, reconnecting.
//
// With neither, reports are read and dropped. A slow or absent sink never
// blocks publishers: each sink has a bounded queue and counts what it had
// to drop.
package metricsmgr
