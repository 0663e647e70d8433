// Package recovery is Egret's fault-recovery benchmark (issue 7, T5): it
// runs the at-least-once ackcheck topology (bench/topologies/ackcheck) on
// a fresh local cluster at a fraction of its maximum throughput, kills -9
// one kind of process at a time while data flows — a bolt instance, a
// spout instance, a stream manager, a metrics manager, the topology
// manager, every process of a container — and reports per fault:
//
//   - the time from the kill until the sink's throughput is back within 10%
//     of the rate before the kill — at least 90% of it — and stays there,
//   - the time until every message emitted before the kill is acked,
//   - the number of replayed roots (emits of a message id emitted before).
//
// Throughput and progress are read from the files the topology writes in
// its state directory — the sinks' records, the spouts' acked and replay
// logs and cursors — which survive every killed process, so no figure
// depends on the metrics pipeline that some faults interrupt. Like package
// bench/harness it prints figures and never judges them.
package recovery
