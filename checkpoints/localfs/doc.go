// Package localfs is the "localfs" checkpoint storage (spi.CheckpointStorage)
// of effectively-once topologies: each task's state of each checkpoint is a
// file in a local directory, or in a shared file system mounted at the same
// path on every host (NFS) when containers run on several machines.
//
// Config:
//
//	egret.checkpoint.storage: localfs
//	egret.checkpoint.localfs.root: ${EGRET_HOME}/checkpoints/${CLUSTER}
//
// Layout: <root>/<topology>/<checkpoint id>/<task>.state, each file a
// 16-byte header (length and CRC-32C of the state) and the state, so that
// a damaged file loads as spi.ErrCorrupt instead of wrong state. A store
// writes a temp file, fsyncs it, renames it into place and fsyncs the
// directory; a delete renames the checkpoint's directory away before it
// removes it, so a checkpoint is never seen half deleted.
package localfs
