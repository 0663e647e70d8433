// Package statebackend is the service-provider interface of keyed-state
// backends: where a task's keyed state lives between checkpoints. A
// backend stores byte values under keys ordered as
//
//	key group (2 bytes, big endian) | state name | 0x00 | user key
//
// so the entries of one key group, and of one state within it, are one
// contiguous range (core/keygroup). Backends register from init functions
// (Register) and are chosen per topology with topology.state.backend:
// statebackends/heap keeps the entries in memory in a copy-on-write B-tree,
// statebackends/pebble in an LSM tree on local disk, for state larger than
// memory. statebackends/statebackendtest is the conformance suite.
//
// A snapshot has a synchronous part (Backend.Snapshot: fork a consistent
// view, short and independent of the state's size) and an asynchronous
// part (Snapshot.WriteTo: stream the view in the format of format.go while
// the task keeps changing the backend).
package statebackend
