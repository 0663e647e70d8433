package instance

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/daemons/ckptio"
)

// uploads is the asynchronous part of a task's checkpoints: the snapshot
// forked at a barrier is streamed to the container's checkpoint manager
// (daemons/ckptio) on a goroutine of its own, one checkpoint after the
// other, while the task goes on processing. It also reads a checkpoint back
// at a restore.
type uploads struct {
	in     *Instance
	client *ckptio.Client
	up     *ckptio.Uploader

	once sync.Once
	jobs chan uploadJob
}

type uploadJob struct {
	snap ckptio.TaskSnapshot
	done func(manifest []byte, err error)
}

// maxQueuedUploads bounds the checkpoints forked and not uploaded yet; a
// barrier beyond them fails its checkpoint rather than holding more forks.
const maxQueuedUploads = 2

// newUploads connects (lazily) to the checkpoint manager of cfg.
func newUploads(in *Instance) (*uploads, error) {
	c, err := ckptio.NewClient(in.cfg.CkptMgrSocket, ckptio.Options{MaxFrame: in.cfg.MaxFrame})
	if err != nil {
		return nil, err
	}
	return &uploads{in: in, client: c, up: ckptio.NewUploader(c, int32(in.cfg.TaskID)),
		jobs: make(chan uploadJob, maxQueuedUploads)}, nil
}

// fork takes the synchronous part of checkpoint id on the task's
// goroutine: the operator state already encoded, and a fork of the keyed
// state (an incremental checkpoint when the backend has them, a snapshot
// stream otherwise; none when b is nil).
func (u *uploads) fork(id int64, operator []byte, b statebackend.Backend, backend string, maxParallelism int, groups keygroup.Range) (ckptio.TaskSnapshot, error) {
	snap := ckptio.TaskSnapshot{Checkpoint: id, Task: int32(u.in.cfg.TaskID), MaxParallelism: maxParallelism, Groups: groups,
		Backend: backend, Operator: operator}
	if b == nil {
		return snap, nil
	}
	if inc, ok := b.(statebackend.Incremental); ok {
		fc, err := inc.Checkpoint()
		if err != nil {
			return snap, err
		}
		snap.Files, snap.Incarnation = fc, inc.Incarnation()
		return snap, nil
	}
	s, err := b.Snapshot()
	if err != nil {
		return snap, err
	}
	snap.Keyed = s
	return snap, nil
}

// upload queues snap; done runs on the upload goroutine with the encoded
// manifest to store (StoreInstanceState's state) or the error that failed
// the checkpoint.
func (u *uploads) upload(snap ckptio.TaskSnapshot, done func(manifest []byte, err error)) {
	u.once.Do(func() { go u.run() })
	select {
	case u.jobs <- uploadJob{snap, done}:
	default:
		snap.Release()
		done(nil, fmt.Errorf("checkpoint %d: %d earlier checkpoints are still uploading (the checkpoint interval is shorter than an upload)", snap.Checkpoint, maxQueuedUploads))
	}
}

func (u *uploads) run() {
	m := u.in.metrics
	for {
		var j uploadJob
		select {
		case <-u.in.ctx.Done():
			for {
				select {
				case j := <-u.jobs:
					j.snap.Release()
				default:
					return
				}
			}
		case j = <-u.jobs:
		}
		man, st, err := u.up.Upload(u.in.ctx, j.snap)
		var b []byte
		if err == nil {
			b, err = man.MarshalBinary()
		}
		if err != nil {
			u.in.log.Warn("checkpoint upload failed", zap.Int64("checkpoint", j.snap.Checkpoint), zap.Error(err))
			j.done(nil, err)
			continue
		}
		m.CheckpointAsyncNanos.Store(int64(st.Duration))
		m.CheckpointUploadedBytes.Add(st.Uploaded)
		m.CheckpointFullBytes.Store(st.Full)
		m.CheckpointIncrementalBytes.Store(st.Uploaded)
		u.in.log.Debug("checkpoint uploaded", zap.Int64("checkpoint", j.snap.Checkpoint), zap.Int64("full_bytes", st.Full),
			zap.Int64("uploaded_bytes", st.Uploaded), zap.Int("files", st.Files), zap.Int("reused", st.Reused), zap.Duration("took", st.Duration))
		j.done(b, nil)
	}
}

// restore reads the checkpoint whose manifest is blob (none: empty state)
// into b (when not nil), keeping the entries of groups, and returns the
// operator state it holds (nil for none). scratch is a local directory
// for the files of an incremental checkpoint, on the file system of the
// backend's directory.
func (u *uploads) restore(blob []byte, b statebackend.Backend, groups keygroup.Range, scratch string) ([]byte, error) {
	if len(blob) == 0 {
		return nil, nil
	}
	man, err := ckptio.UnmarshalManifest(blob)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(u.in.ctx, restoreTimeout)
	defer cancel()
	start := time.Now()
	ops, err := u.up.Restore(ctx, []*ckptio.Manifest{man}, ckptio.RestoreTarget{Backend: b, Groups: groups, Dir: scratch})
	if err != nil {
		return nil, err
	}
	local, downloaded := u.up.LastRestore()
	u.in.log.Info("checkpoint downloaded", zap.Int64("checkpoint", man.Checkpoint), zap.Int64("bytes", man.Size()),
		zap.Int64("local_files", local), zap.Int64("downloaded_files", downloaded), zap.Duration("took", time.Since(start)))
	return ops[0], nil
}

// restoreRescaled reads the share of the task (its key groups) of
// checkpoint id, taken when its component had the tasks old, into b (when
// not nil), and returns the old tasks' operator states (nil for none).
func (u *uploads) restoreRescaled(id int64, old []int32, b statebackend.Backend, maxParallelism int, groups keygroup.Range, scratch string) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(u.in.ctx, restoreTimeout)
	defer cancel()
	start := time.Now()
	ops, err := u.up.RestoreRescaled(ctx, id, old, maxParallelism, ckptio.RestoreTarget{Backend: b, Groups: groups, Dir: scratch})
	if err != nil {
		return nil, err
	}
	u.in.log.Info("rescaled checkpoint downloaded", zap.Int64("checkpoint", id), zap.Int32s("old_tasks", old), zap.Stringer("groups", groups),
		zap.Duration("took", time.Since(start)))
	return ops, nil
}

// restoreTimeout bounds the download of a task's checkpoint.
const restoreTimeout = 30 * time.Minute

// close closes the connections to the checkpoint manager; the upload
// goroutine ends with the instance's context, releasing what is queued.
func (u *uploads) close() error { return u.client.Close() }
