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
// allowUnrestored, with the same max parallelism (key groups are fixed)
// and, for now, the same parallelism. The error says what differs and how
// to fix it.
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
		if got := len(layout.Tasks[c.Name]); got != c.Parallelism {
			return fmt.Errorf("component %q has parallelism %d in the savepoint and %d in the topology: start it at %d (--component-parallelism %s:%d after submit needs a stateful rescale)",
				c.Name, c.Parallelism, got, c.Parallelism, c.Name, got)
		}
		if c.HasState() {
			if got := t.MaxParallelism(c.Name); got != c.MaxParallelism {
				return fmt.Errorf("component %q has max parallelism %d in the savepoint and %d in the topology: key groups cannot change; set %s=%d on it", c.Name, c.MaxParallelism, got, topology.KeyMaxParallelism, c.MaxParallelism)
			}
		}
	}
	if len(missing) > 0 && !allowUnrestored {
		sort.Strings(missing)
		return fmt.Errorf("the savepoint holds the state of component(s) %s, which the topology does not have; rename them back, or pass --allow-unrestored-state to drop that state", strings.Join(missing, ", "))
	}
	return nil
}

// Seed copies the savepoint m (read from the namespace name of src) into
// dst as checkpoint m.Checkpoint of topology t packed as p: the files of
// each task that matches a savepoint task by component and index, renamed
// to the new task, and one manifest per task of t (an empty one for a task
// without saved state). Check must have passed. On failure what was
// written is removed; undo removes it after a success.
func Seed(ctx context.Context, m *Manifest, src spi.CheckpointFiles, name string, dst Storage, t *topology.Topology, p *plan.PackingPlan) (undo func(), err error) {
	w := &writer{ctx: ctx, dst: dst, name: t.Name}
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
	for _, c := range t.Components {
		saved := m.Component(c.Name)
		for i, task := range byIndex(layout, c.Name) {
			tm := &ckptio.Manifest{Checkpoint: m.Checkpoint, Task: int32(task)}
			if saved != nil {
				old := saved.Tasks[i].Manifest
				tm.MaxParallelism, tm.Groups, tm.Backend = old.MaxParallelism, old.Groups, old.Backend
				for _, f := range old.Files {
					nf := f
					nf.Name = ckptio.FileName(m.Checkpoint, int32(task), f.Part)
					if _, _, err := copyFile(ctx, src, name, f, func(r io.Reader) (int64, uint64, error) { return w.put(nf.Name, r) }); err != nil {
						return nil, fmt.Errorf("savepoint %s: %w", name, err)
					}
					tm.Files = append(tm.Files, nf)
				}
			}
			b, err := tm.MarshalBinary()
			if err != nil {
				return nil, err
			}
			key := spi.CheckpointKey{Topology: t.Name, Checkpoint: m.Checkpoint, Task: int32(task)}
			if err := dst.Store(ctx, key, b); err != nil {
				return nil, fmt.Errorf("store the state of task %d (%s): %w", task, c.Name, err)
			}
		}
	}
	return remove, nil
}
