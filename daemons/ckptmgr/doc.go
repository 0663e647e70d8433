// Package ckptmgr is the checkpoint manager of a container: the daemon
// that keeps the state of an effectively-once topology's tasks in the
// configured checkpoint storage (spi.CheckpointStorage, DESIGN.md §6). One
// runs per container 1..N, next to the stream manager:
//
//	egret ckptmgr --topology N --container C --socket S --config F [--metrics-socket M]
//
// It listens on a Unix socket. The container's stream manager connects and
// sends frames of package wire; each request is answered in order, one
// response per request:
//
//	SaveStateRequest        -> Store(topology, checkpoint, task) -> SaveStateResponse
//	LoadStateRequest        -> Load                              -> LoadStateResponse (not_found for a missing state)
//	CleanCheckpointsRequest -> List, then Delete of the ids below keep_from
//	                           and, when delete_after > 0, above it -> CleanCheckpointsResponse
//
// A storage failure (a full disk, a permission denied, an unreachable
// NameNode) is answered with its text in the response's error field; the
// manager keeps serving. A frame it cannot read (garbage, a frame above
// the size limit, a frame type it does not serve) closes that connection
// only. When the storage is a plugin whose process exited, the manager
// answers the request that found it and stops with an error, so that the
// executor restarts it with a new plugin process.
//
// With --metrics-socket it publishes to the container's metrics manager
// (source "ckptmgr"): ckptmgr.saves, ckptmgr.save.errors,
// ckptmgr.saved.bytes, ckptmgr.loads, ckptmgr.load.errors,
// ckptmgr.load.not.found, ckptmgr.loaded.bytes, ckptmgr.cleans,
// ckptmgr.clean.errors, ckptmgr.deleted.checkpoints, ckptmgr.bad.connections,
// and its process metrics.
package ckptmgr
