// Package harness runs Egret's benchmarks and reports them: the cluster
// benchmark T1 (ConstSpoutNullBolt on a fresh local cluster, every engine
// process measured from /proc), the Go micro-benchmarks (go test -bench),
// and the markdown report docs/benchmarks.md.
//
// Benchmarks print figures and never judge them: nothing here has a
// threshold. Measurement follows ../shared/reference/performance-anchors.md
// §6: CPU is the user+system time of every engine process read from
// /proc/<pid>/stat at the start and the end of the window (not nominal
// cores), throughput is the sink's executed counter from the metrics files
// the metrics managers write, interpolated to the same instants, and each
// benchmark runs several times and is reported as median and min–max.
package harness
