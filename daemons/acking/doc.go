// Package acking holds the XOR ledger of at-least-once delivery: for every
// pending tuple tree (root) of a spout task, the XOR of the edge ids of the
// tuple copies of the tree that were sent and not yet acked. A root whose
// value returns to 0 is complete. Memory is bounded by a capacity and by
// rotating buckets: roots that stay in the oldest bucket are dropped, as in
// Heron's stream manager (the spout instance enforces the message timeout
// itself; the rotation only reclaims memory).
package acking
