// Package kafka is Egret's Kafka connector: a Spout that emits the records
// of Kafka topics and a Sink bolt that writes tuples to a topic, built on
// franz-go (github.com/twmb/franz-go) and package api only. docs/kafka.md
// is the user guide; this is the summary.
//
// # Spout
//
// NewSpout(SpoutConfig{...}) emits one tuple per record with the fields
// key ([]byte), value ([]byte), topic (string), partition (int32), offset
// (int64) and timestamp (time.Time). NextTuple never blocks: franz-go
// fetches in the background into its bounded buffer, and NextTuple emits
// at most MaxPollRecords of what is buffered.
//
// Partitions come from a consumer group (SpoutConfig.Group, outside
// effectively-once mode) or are assigned manually: partition p of topic t
// belongs to task index (fnv1a32(t)+p) mod tasks, so adding partitions or
// topics moves no other partition. What is committed depends on the
// topology's delivery mode:
//
//   - at-least-once: every record is emitted with a MsgID. Each
//     CommitInterval the spout commits to the group, per partition, the
//     offset of the first record not yet acked (the contiguous acked
//     prefix), never past an unacked one. A failed record is emitted
//     again. When the group revokes partitions the spout commits their
//     prefix synchronously and forgets their pending records (acks for
//     them are ignored); assigned partitions resume from the group's
//     committed offsets. Rebalances wait for NextTuple to finish
//     (franz-go's BlockRebalanceOnPoll), so no emitted record straddles
//     one.
//   - at-most-once: no message ids; each CommitInterval the offsets after
//     the emitted records are committed.
//   - effectively-once: the spout implements api.Stateful. Its positions
//     (topic/partition → next offset) live in the api.State named
//     PositionsState and advance as records are emitted; InitState (at the
//     start and after every rollback) drops everything fetched, and
//     consumes this task's partitions again from the restored positions
//     (StartOffset where none is saved). Positions are keyed by
//     partition: a task keeps those of the partitions it owns and drops
//     the others, so given the union of every task's positions (a
//     restore with another parallelism) each partition resumes where it
//     was. Nothing is committed to Kafka and no group is joined.
//
// # Sink
//
// NewSink(SinkConfig{...}) writes the KeyField ("key") and ValueField
// ("value") of each input tuple as a record's key and value.
//
//   - at-least-once: an idempotent producer (acks=all); a tuple is acked
//     only when the broker acknowledged its record, and failed when the
//     produce fails (after franz-go's retries, within ProduceTimeout).
//     Acks are handed to the task goroutine through api.Pumper.
//   - at-most-once: produce and ack at once; failures are logged.
//   - effectively-once: a two-phase-commit sink over Kafka transactions.
//     Execute produces into an open transaction at once (memory bounded
//     by MaxBufferedBytes, nothing kept in state). PreSave(c) flushes it
//     and records its producer id, epoch and checkpoint c in the state
//     TransactionsState under its transactional id; CheckpointComplete(c) commits the
//     transactions of checkpoints ≤ c with EndTxn by that id and epoch,
//     from whichever process holds the state. Task i cycles through the
//     transactional ids "<TransactionalID>-<i>-<slot>"; a slot is reused
//     only when no restorable state can name its last transaction, and
//     InitState fences every slot the restored state does not name,
//     aborting what a dead or zombie producer left open. Consumers reading
//     read_committed see every record exactly once.
//
// # Configuration
//
// A SpoutConfig or SinkConfig field left at its zero value is read from the
// component's config key named in its documentation (KeyBrokers,
// KeyTopics, ...), so settings may live in the topology config.
package kafka
