// Package savepoint reads and writes savepoints (docs/savepoints.md): a
// user-triggered, self-contained and relocatable copy of every task's state
// at one complete checkpoint of an effectively-once topology, written
// through the checkpoint storage SPI (spi.CheckpointFiles) to a URI the
// user names — a directory, or hdfs://namenode:port/directory.
//
// A savepoint named N below a root R is the namespace N of the storage
// rooted at R: its files (R/N/files/ on localfs and hdfs) are the tasks'
// operator states and keyed states, copied from the cluster's checkpoint
// storage, and SAVEPOINT, the top-level Manifest, written last — a
// savepoint exists iff its manifest does. Keyed state is always a keyed
// snapshot stream (core/statebackend's format, which every backend
// reads): Write converts the files of an incremental (pebble) checkpoint
// into one, so a savepoint of a heap topology restores into pebble and
// back. Nothing in a savepoint refers to the cluster that wrote it.
//
// Seed is the other way: it checks a savepoint against the topology being
// submitted (components matched by name, their parallelism and max
// parallelism, states with no component refused unless allowed) and
// copies it into the cluster's checkpoint storage as checkpoint N of the
// new topology, one ckptio.Manifest per task, which the ordinary first
// restore of the topology reads.
package savepoint
