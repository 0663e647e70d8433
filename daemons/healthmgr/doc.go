// Package healthmgr is the health manager daemon (`egret healthmgr`), run
// in container 0 of a topology that sets topology.healthmgr.enabled (Heron's
// Dhalion, reduced to its back pressure policy; docs/operations.md,
// "Health manager").
//
// Every topology.healthmgr.interval it reads the topology manager's
// aggregated metrics (GET /stats) and turns the stream managers' reports
// into one observation:
//
//   - back pressure is on when some stream manager's
//     stmgr.backpressure.time.throttled.ns grew since its previous report
//     (or it reports stmgr.backpressure.active = 1);
//   - the culprit is the bolt whose task holds the most bytes, counting the
//     stream manager's queue toward it (stmgr.instance.<task>.queue.bytes)
//     and its own inbound queue (gateway.in.queue.bytes), in the containers
//     whose stream manager initiated back pressure because of a local
//     instance (stmgr.backpressure.time.by.local.instance.ns grew).
//
// When one component has been the culprit of every observation, without a
// break, for topology.healthmgr.backpressure.threshold, and no decision was
// taken within topology.healthmgr.cooldown, the health manager decides:
// it raises the component's parallelism to max(n+1, ceil(n × factor))
// capped by topology.healthmgr.max.parallelism, through the same path as
// `egret update --component-parallelism` (the Scaler), or records why not
// (at its bound; effectively-once, whose parallelism cannot change; the
// update failed). Every decision is kept, with its reason, in the state
// manager at /healthmgr/<topology> (the last MaxDecisions), where `egret
// metrics` and the tracker read it. A decision restarts the episode, and
// the cool-down, read back from that record, survives a restart of the
// health manager.
package healthmgr
