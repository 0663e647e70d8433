// Package state is the keyed-state benchmark of `make bench` (issue 36's
// S1–S3, group S of docs/benchmarks.md), measured in one process against
// the real backends (statebackends/heap, statebackends/pebble) and a real
// checkpoint manager (daemons/ckptmgr over the localfs storage, through
// daemons/ckptio's uploader, as a task uploads):
//
//   - S1: keyed counting (read, add one, write the value of a random key)
//     per CPU-second of the process, over the whole state;
//   - S2: a checkpoint of the state: the synchronous part (the fork the
//     task's goroutine waits for; the median of five forks), also right
//     after a memtable's worth of writes, the asynchronous part (the upload), the bytes of the full
//     checkpoint and of the next one after 1% of the keys changed, and the
//     p99 of a keyed update while an upload runs against its p99 between
//     uploads;
//   - S3: the restore of the last checkpoint into an empty backend
//     (download and open), which bounds a task's recovery after a kill.
//
// Figures are ratios within one run on a shared machine: never compare
// absolute figures across runs.
package state
