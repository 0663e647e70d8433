// Package latency is the coordinated-omission-safe latency measurement of
// Egret's benchmark topologies (performance-anchors.md §6, TVL's rule).
//
// A rate-limited spout owns a Pacer: tuple i is due at t0 + i/rate, and the
// spout stamps that SCHEDULED time (not the time it actually emitted) into
// the tuple. The last bolt records now − scheduled into a Recorder, so a
// stall delays the schedule of every tuple behind it and each of them
// counts its full delay. Recorders write one HdrHistogram per interval to a
// file (one JSON line per interval: the interval's bounds and the
// histogram's compressed encoding); the harness merges the intervals that
// fall in its measurement window with Merge.
package latency
