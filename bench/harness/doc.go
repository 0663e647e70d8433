// Package harness runs Egret's benchmark suite and reports it: a
// calibration of the machine's transports (calibration.go), the cluster
// benchmarks T1–T3 on fresh local clusters with every engine process
// measured from /proc (cluster_bench.go; workloads ConstNull,
// HeronWordCount, SentenceWordCount), latency from HdrHistogram interval
// logs written by the topologies (bench/topologies/latency), the Go
// micro-benchmarks (micro.go), issue 7's targets (targets.go), and the
// markdown report docs/benchmarks.md (report.go). T4 and T5 are built
// elsewhere and join through SuiteOptions.External.
//
// Benchmarks print figures and never fail on them: nothing here has a
// threshold that changes an exit code. Measurement follows
// ../shared/reference/performance-anchors.md §6: CPU is the user+system
// time of every engine process read from /proc/<pid>/stat at the start and
// the end of the window (not nominal cores), throughput is the sink's
// executed counter from the metrics files the metrics managers write,
// interpolated to the same instants, and each benchmark runs several times
// and is reported as median and min–max.
package harness
