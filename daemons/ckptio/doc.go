// Package ckptio moves a task's checkpoint between the task and the
// checkpoint storage, through its container's checkpoint manager
// (daemons/ckptmgr), without a limit on the state's size. It is a contract
// package (scripts/layering): the instance uses its client, the checkpoint
// manager serves its protocol.
//
// A task's checkpoint is a set of files and a manifest that names them
// (Manifest: each file's name, part, size, XXH64 and key groups). At a
// barrier the task forks its state synchronously (a TaskSnapshot: operator
// state bytes, and a statebackend.Snapshot stream or a
// statebackend.Incremental checkpoint directory); an Uploader then streams
// the files to the checkpoint manager, off the task's goroutine, and
// returns the manifest, which the task sends in StoreInstanceState: the
// stream manager stores it last (SaveStateRequest), so a checkpoint exists
// for a task iff its manifest is stored. An incremental checkpoint uploads
// only the files its previous upload did not; the others keep their stable
// names. Restore reads the manifests back, downloads what the task's key
// groups need, Parallel files at once, and checks each file's size and
// hash against its manifest.
//
// The protocol runs on the checkpoint manager's Unix socket, in frames of
// package wire (types 102..108) with hand-written payloads (Msg,
// AppendMsg, DecodeMsg): a file is uploaded as Create, Chunks of at most
// ChunkSize bytes (and below the frame limit), Commit(size, XXH64), which
// the manager answers with a Result once the storage committed the file
// (spi.CheckpointFiles: nothing is visible before). A read is Open,
// answered with a Result holding the size, the chunks, and a Result ending
// them. Stat returns the sizes of files; Manifest reads a stored manifest
// (a rescaled task reads those of the tasks that held its groups).
package ckptio
