// Package tracker is Egret's tracker: a long-running REST API over the
// state managers of one or more clusters and the topology managers of
// their topologies, shaped like Heron's tracker, and the console (web UI)
// it serves at "/". It is read-only unless started with an operator
// token (Options.OperatorToken), which enables the console's actions
// (actions.go).
//
// Without an operator token the tracker never writes state. It reads the node tree (core/state) of
// each cluster through one state manager session per cluster, and asks a
// topology manager's HTTP API (GET /stats, GET /exceptions) for live
// metrics and exceptions.
//
// Endpoints (all GET, JSON; openapi.yaml documents each and is served at
// /openapi.yaml):
//
//	/clusters                        the clusters the tracker serves
//	/topologies                      topologies with status (cluster, role, environ filters)
//	/topologies/logicalplan          components, streams and edges with groupings
//	/topologies/packingplan          containers → instances with resources
//	/topologies/physicalplan         packing plan + stream manager hosts/ports,
//	                                 instance pids, start times and restarts
//	/topologies/executionstate       the submission record and scheduler job links
//	/topologies/metrics              latest metrics, task → component → topology
//	/topologies/metrics/timeline     rates and latencies over time
//	/topologies/exceptions           distinct exceptions with counts and stacks
//	/topologies/exceptionsummary     exceptions grouped by component and message
//	/topologies/overview             the console's overview: health, back pressure,
//	                                 busy-ness, containers' CPU and memory
//	/topologies/component            one component's per-task table
//	/topologies/checkpoints          checkpoint history (effectively-once)
//	/topologies/logs                 a log file rendered as text lines
//	/actions                         the console's recent actions
//	POST /topologies/actions/<kind>  activate, deactivate, kill, rescale, loglevel
//	                                 (with the operator token)
//
// The topology endpoints take the query parameters cluster and topology
// (required), environ and role (optional: when given they must match the
// topology's), component and instance (a task id) where they apply. Names
// are checked with core/names before any lookup: a malformed parameter is
// a 400, an unknown cluster, topology, component or instance a 404, a
// topology manager that cannot be reached a 503; every error is a JSON
// object {"error": "..."} of one line.
//
// # Timeline
//
// The tracker samples the /stats of every running topology of every
// cluster every Options.SampleInterval (default 5s) and keeps, per
// topology, a fine ring of Options.FineWindow (default 10 minutes) at that
// interval and a coarse ring of Options.CoarseWindow (default 1 hour) at
// one-minute resolution. Each sample holds a fixed set of derived series
// (see TimelineSeries) per component and per task, so memory is bounded
// by topologies × (fine + coarse samples) × (components + tasks) ×
// len(TimelineSeries) × 8 bytes; Options.MaxTopologies (default 64) and
// Options.MaxTasks (default 512 per topology; components are always kept)
// bound the factors. With the defaults, 64 topologies of 512 tasks take
// at most about 64 × 180 × 512 × 14 × 8 B ≈ 660 MB; a typical topology of
// 20 tasks about 410 KB. The console keeps besides, per topology, the
// latest /stats answer and every process's last two reports (for rates
// and latency percentiles over the last report interval) and at most 120
// completed checkpoints: a few hundred bytes per metric a process
// publishes, once, not per sample.
//
// Restarts are counted by the tracker: every process publishes its pid
// and start time (process.pid, process.start.unix); a change between two
// samples of a task is one restart. The count covers the time the tracker
// watched the topology.
package tracker
