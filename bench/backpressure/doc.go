// Package backpressure is benchmark T4 (issue 6): an unthrottled spout
// feeds a bolt limited to a fixed rate (topology
// test/e2e/testdata/slowbolt) on a fresh 2-container local cluster, the
// spout in container 1 and the bolt in container 2, so that back pressure
// starts at the bolt's stream manager and crosses to the spout's. It runs
// for a duration, sampling the resident set (VmRSS) of every engine
// process by kind, then makes the bolt unlimited. It reports memory over
// time (a JSON series and a markdown table: per kind min, median, max and
// the slope after warm-up), the time from submission until the spout's
// stream manager reports back pressure on, the time from "unlimited"
// until it reports it off, and until the bolt runs at full speed again.
//
// Like bench/harness it prints figures and never judges them. It reuses
// the harness's exported Build, ModuleRoot, DescribeMachine, Summarize and
// ReadSeries; copies of small unexported harness helpers live in
// cluster.go (see its comment).
package backpressure
