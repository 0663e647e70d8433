// Package ackcheck is the at-least-once verification topology of the
// end-to-end tests and the recovery benchmark, and the readers of the files
// it leaves behind.
//
// The spout "source" reads a replayable source: the message ids 0..N-1
// (unbounded when N is 0), each spout task owning the ids i with
// i % parallelism == task index. It emits every owned id that is not yet
// acked, with the id as message id, and keeps its progress in a state
// directory shared by every process of the topology:
//
//	acked-<index>.log    one acked id per line (appended on Ack)
//	replays-<index>.log  one id per line for every emit of an id that was
//	                     emitted before (after a Fail, or after a restart of
//	                     the spout): emits minus distinct ids
//	cursor-<index>       the highest fresh id emitted (rewritten in place
//	                     before each fresh emit)
//	sink-<task>.log      "<id> <copy>" per tuple the sink received
//
// A restarted spout task reads its acked log and emits what is missing, so a
// kill -9 of any process loses nothing that the topology acks: the files
// live in the page cache, which survives the process.
//
// The chain is source → fanout (shuffle; emits Copies tuples (id, copy)
// anchored on its input) → relay (fields grouping on id; emits anchored) →
// sink (fields grouping on id; appends a line, then acks). Check reads the
// files and says which ids were acked, which (id, copy) pairs reached the
// sink, and how often.
package ackcheck
