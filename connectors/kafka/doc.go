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
// effectively-once mode) or are assigned manually: the sorted (topic,
// partition) list (or SpoutConfig.Partitions) is dealt round-robin over
// the component's tasks by task index. What is committed depends on the topology's delivery mode:
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
//     (StartOffset where none is saved). Nothing is committed to Kafka and
//     no group is joined.
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
//   - effectively-once: a two-phase-commit sink. The records of a
//     checkpoint interval are buffered and moved into the api.State named
//     BatchesState in PreSave(id) as batch id, so they are saved with the
//     checkpoint (phase one). CheckpointComplete(id) writes the batches of
//     every checkpoint ≤ id in one Kafka transaction under the stable
//     transactional id "<TransactionalID>-<task index>", together with a
//     marker record (key: the transactional id, value: the last checkpoint
//     id) in the compacted MarkerTopic, and then drops them from the state
//     (phase two). Before its first commit (and after a rollback or a
//     failure) a sink initialises its producer id, which fences any earlier
//     producer of the same transactional id and aborts its open
//     transaction, and then reads its last marker back (read_committed, up
//     to a probe record it writes), so that batches already committed
//     before a crash are dropped, not written again. Consumers reading
//     read_committed see every record exactly once.
//
// # Configuration
//
// A SpoutConfig or SinkConfig field left at its zero value is read from the
// component's config key named in its documentation (KeyBrokers,
// KeyTopics, ...), so settings may live in the topology config.
package kafka
