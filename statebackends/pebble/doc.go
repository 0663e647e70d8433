// Package pebble is the keyed-state backend on local disk
// (topology.state.backend pebble): the task's entries in an LSM tree
// (github.com/cockroachdb/pebble/v2) in a directory of the container, for
// state larger than memory. Only the memtables and a block cache stay in
// memory. A snapshot is a pebble snapshot (constant time: a sequence
// number), streamed while the task goes on writing. The write-ahead log is
// off: durability comes from checkpoints, and a restarted task restores its
// state from the last one.
package pebble
