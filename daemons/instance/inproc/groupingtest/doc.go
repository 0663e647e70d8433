// Package groupingtest holds Egret's grouping conformance cases, shared by
// every runtime so that a grouping behaves the same in the in-process
// runner (package inproc) and across the containers of a real cluster
// (test/e2e).
//
// A Case builds a topology whose spout "src" emits a bounded,
// deterministic set of keyed tuples and whose bolts record every tuple they
// execute through a Recorder: Memory when every task runs in the test's
// process, Files when each task is its own process (one JSON-lines file
// per task under the directory of the topology setting KeyRecordDir). The
// records, the runtime's counters and the task layout form a Result, which
// Case.Check asserts on with the same code whatever the runtime.
//
// The spout reads its behaviour from the topology setting KeyCase, and the
// bolts of all cases have distinct names, so AllBuilder can declare every
// component of every case in one topology: a topology binary in instance
// mode, which gets no arguments of its own, builds that and finds the
// factory of any submitted case by name.
package groupingtest
