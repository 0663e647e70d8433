package savepoint

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/ckptio"
)

// Check tells whether the savepoint m can start topology t packed as p:
// every component of m that saved state must exist in t (by name) unless
// allowUnrestored, with the same max parallelism (key groups are fixed);
// its parallelism may differ (its tasks then share the saved state out,
// as after a rescale). The error says what differs and how to fix it.
func Check(m *Manifest, t *topology.Topology, p *plan.PackingPlan, allowUnrestored bool) error {
	layout := p.Layout()
	var missing []string
	for _, c := range m.Components {
		if _, ok := layout.Tasks[c.Name]; !ok {
			if c.HasState() {
				missing = append(missing, c.Name)
			}
			continue
		}
		if !c.HasState() {
			continue
		}
		if got := t.MaxParallelism(c.Name); got != c.MaxParallelism {
			return fmt.Errorf("component %q has max parallelism %d in the savepoint and %d in the topology: key groups cannot change; set %s=%d on it", c.Name, c.MaxParallelism, got, topology.KeyMaxParallelism, c.MaxParallelism)
		}
		if n := len(layout.Tasks[c.Name]); n > c.MaxParallelism {
			return fmt.Errorf("component %q: parallelism %d is above its max parallelism %d (its key groups)", c.Name, n, c.MaxParallelism)
		}
	}
	if len(missing) > 0 && !allowUnrestored {
		sort.Strings(missing)
		return fmt.Errorf("the savepoint holds the state of component(s) %s, which the topology does not have; rename them back, or pass --allow-unrestored-state to drop that state", strings.Join(missing, ", "))
	}
	return nil
}

// Seed copies the savepoint m (read from the namespace name of src) into
// dst as checkpoint m.Checkpoint of topology t packed as p, and returns
// the tasks of each component at that checkpoint, which the topology's
// checkpoint state must record (egretpb.CheckpointState.tasks). A component
// whose saved tasks are its tasks now (same parallelism, same task ids)
// has each task's files renamed to it and its manifest stored under its
// id. A component whose tasks differ (another parallelism, or ids shifted
// by a component added before it) has the saved manifests stored under
// fresh ids above every task of t, recorded as its tasks then: its tasks
// find it rescaled at their first restore and each reads the key groups
// and the share of operator state that are its own (docs/state.md). A
// task without saved state gets an empty manifest. Check must have
// passed. On failure what was written is removed; undo removes it after a
// success.
func Seed(ctx context.Context, m *Manifest, src spi.CheckpointFiles, name string, dst Storage, t *topology.Topology, p *plan.PackingPlan) (tasks map[string][]int32, undo func(), err error) {
	w := &writer{ctx: ctx, dst: dst, name: t.Name}
	sd := &seeder{w: w, src: src, name: name, dst: dst, checkpoint: m.Checkpoint}
	remove := func() {
		w.undo()
		_ = dst.Delete(context.WithoutCancel(ctx), t.Name, m.Checkpoint)
	}
	defer func() {
		if err != nil {
			remove()
		}
	}()
	layout := p.Layout()
	fresh := int32(0)
	for task := range layout.ComponentOf {
		fresh = max(fresh, int32(task))
	}
	tasks = map[string][]int32{}
	for _, c := range t.Components {
		now := byIndex(layout, c.Name)
		saved := m.Component(c.Name)
		if saved != nil && !sameTasks(saved.Tasks, now) {
			for _, old := range saved.Tasks {
				fresh++
				if err := sd.task(old.Manifest, fresh); err != nil {
					return nil, nil, err
				}
				tasks[c.Name] = append(tasks[c.Name], fresh)
			}
			continue
		}
		for i, task := range now {
			var old *ckptio.Manifest
			if saved != nil {
				old = saved.Tasks[i].Manifest
			}
			if err := sd.task(old, int32(task)); err != nil {
				return nil, nil, err
			}
			tasks[c.Name] = append(tasks[c.Name], int32(task))
		}
	}
	return tasks, remove, nil
}

func sameTasks(saved []Task, now []int) bool {
	if len(saved) != len(now) {
		return false
	}
	for i, t := range saved {
		if t.Task != int32(now[i]) {
			return false
		}
	}
	return true
}

// seeder copies the tasks of the savepoint name (in src) into dst.
type seeder struct {
	w          *writer // of dst's files, in the topology's namespace
	src        spi.CheckpointFiles
	name       string
	dst        Storage
	checkpoint int64
}

// task stores the saved task manifest old (nil: none) as the manifest of
// task, its files copied under the task's names.
func (s *seeder) task(old *ckptio.Manifest, task int32) error {
	tm := &ckptio.Manifest{Checkpoint: s.checkpoint, Task: task}
	if old != nil {
		tm.MaxParallelism, tm.Groups, tm.Backend = old.MaxParallelism, old.Groups, old.Backend
		for _, f := range old.Files {
			nf := f
			nf.Name = ckptio.FileName(s.checkpoint, task, f.Part)
			if _, _, err := copyFile(s.w.ctx, s.src, s.name, f, func(r io.Reader) (int64, uint64, error) { return s.w.put(nf.Name, r) }); err != nil {
				return fmt.Errorf("savepoint %s: %w", s.name, err)
			}
			tm.Files = append(tm.Files, nf)
		}
	}
	b, err := tm.MarshalBinary()
	if err != nil {
		return err
	}
	key := spi.CheckpointKey{Topology: s.w.name, Checkpoint: s.checkpoint, Task: task}
	if err := s.dst.Store(s.w.ctx, key, b); err != nil {
		return fmt.Errorf("store the state of task %d: %w", task, err)
	}
	return nil
}
