// Package keygroup maps keys to the tasks that own their state.
//
// Keyed state is partitioned into key groups, a fixed number per component
// (its max parallelism, topology.max.parallelism, default 128). A key's
// group depends on the key alone; a group's task depends on the group, the
// max parallelism and the component's parallelism. The fields grouping
// routes a tuple with this mapping, so a tuple always reaches the task that
// owns its key's state, and a change of parallelism moves whole key groups
// (contiguous ranges of them) between tasks, never single keys.
//
//	group = floor(hash × max / 2^64)          (the high word of hash × max)
//	task  = floor(group × parallelism / max)  (index among the tasks, ascending ids)
//
// where hash is the fields-grouping hash of the key (core/tuple.FieldsHash,
// XXH64 of the key's canonical bytes, docs/tuple-format.md). Task i owns
// the groups [ceil(i×max/p), ceil((i+1)×max/p)): every task owns at least
// one group when parallelism ≤ max, and the groups of a task are
// contiguous, so a task's state is one key range in an ordered store.
package keygroup
