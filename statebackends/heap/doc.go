// Package heap is the in-memory keyed-state backend (topology.state.backend
// heap, the default): the task's entries in one copy-on-write B-tree
// ordered by stored key. A snapshot clones the tree in constant time (the
// synchronous part); the task's later writes copy the nodes they change,
// so the clone stays the state at the fork while it is streamed on another
// goroutine. State is bounded by the process's memory.
package heap
