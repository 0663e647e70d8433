// Package inproc runs a whole topology inside one process: every task is an
// instance.Instance (the same runtime as in a container) on its own
// goroutine, joined by an in-memory transport that routes batches by
// destination task id through bounded queues. It backs local mode
// (`topology-binary --local`) and the unit tests of topologies.
package inproc
