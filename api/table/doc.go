// Package table adds unbounded, keyed "table" operators to Egret
// topologies, the ones SQL streaming queries need besides windows:
//
//   - GroupBolt: group aggregation over the whole stream (no window),
//     emitting upserts — the key's new result replaces its previous one.
//     Results are emitted in mini-batches: every key that changed since
//     the last flush is emitted once per Flush interval and at the end of
//     the input, as Flink's mini-batch aggregation does. The aggregate
//     functions are window.AggregateFunc; this package adds TopN (top-N
//     per key), Latest (deduplication keeping the newest), and
//     DistinctCount (count distinct).
//   - JoinBolt: the regular (unbounded) inner equi-join of two streams:
//     each side keeps every element it accepts per key, and each new
//     element is joined with the other side's elements of its key.
//
// Both are ordinary api.Bolts: subscribe them with a fields grouping on
// the key so that one task sees every element of a key. Inputs are acked
// when processed. The accumulators, the groups awaiting a flush, the join
// sides and the end-of-input markers are in the task's states
// (api.Stateful): under effectively-once they roll back with the input,
// so a replayed tuple is never aggregated or joined twice; keys and
// values are encoded with the state's default serializer
// (api.DefaultSerializer: exported fields of structs). In the other modes a
// restarted task starts empty.
//
// The end of a bounded input: when the bolt has received one tuple on
// EndStream from every task of its EndComponent (an all grouping), it
// flushes and calls OnEnd, so a bounded run's last results are emitted
// at once.
package table
