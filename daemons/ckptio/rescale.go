package ckptio

import (
	"context"
	"fmt"

	"github.com/egret-stream/egret/core/keygroup"
)

// RestoreRescaled restores a task of a component whose parallelism
// changed since checkpoint: it reads the manifests of old (the
// component's tasks at the checkpoint, in index order), checks them with
// CheckRescale, and restores into t the entries of t's key groups from
// every old task that held one of them (Restore). It returns the old
// tasks' operator states, in the order of old (nil for one without),
// which the caller redistributes (api.RedistributeStates).
func (u *Uploader) RestoreRescaled(ctx context.Context, checkpoint int64, old []int32, maxParallelism int, t RestoreTarget) ([][]byte, error) {
	manifests := make([]*Manifest, len(old))
	for i, task := range old {
		m, err := u.c.Manifest(ctx, checkpoint, task)
		if err != nil {
			return nil, fmt.Errorf("ckptio: rescaled restore: old task %d: %w", task, err)
		}
		manifests[i] = m
	}
	if err := CheckRescale(manifests, checkpoint, old, maxParallelism, t); err != nil {
		return nil, err
	}
	return u.Restore(ctx, manifests, t)
}

// CheckRescale checks that manifests are those of checkpoint and of the
// tasks old, and, when t restores keyed state, that they were written
// with the same max parallelism and that their key groups (contiguous,
// one range per old task) cover t.Groups: no key of the task is left
// behind.
func CheckRescale(manifests []*Manifest, checkpoint int64, old []int32, maxParallelism int, t RestoreTarget) error {
	if len(manifests) != len(old) || len(old) == 0 {
		return fmt.Errorf("ckptio: rescaled restore: %d manifests for %d old tasks", len(manifests), len(old))
	}
	for i, m := range manifests {
		if m.Checkpoint != checkpoint || m.Task != old[i] {
			return fmt.Errorf("ckptio: rescaled restore: the manifest read for checkpoint %d task %d is checkpoint %d task %d", checkpoint, old[i], m.Checkpoint, m.Task)
		}
	}
	if t.Backend == nil {
		return nil
	}
	covered := 0
	for _, m := range manifests {
		if m.MaxParallelism != maxParallelism {
			return fmt.Errorf("ckptio: rescaled restore: old task %d of checkpoint %d has %d key groups, the component has %d now (the max parallelism cannot change)",
				m.Task, checkpoint, m.MaxParallelism, maxParallelism)
		}
		covered += overlapLen(m.Groups, t.Groups)
	}
	if covered != t.Groups.Len() {
		return fmt.Errorf("ckptio: rescaled restore: the old tasks %v of checkpoint %d hold %d of the task's %d key groups %v", old, checkpoint, covered, t.Groups.Len(), t.Groups)
	}
	return nil
}

// overlapLen is the number of groups a and b share.
func overlapLen(a, b keygroup.Range) int {
	return max(0, min(a.End, b.End)-max(a.Start, b.Start))
}
