package savepoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/ckptio"
)

// Storage is a checkpoint storage that keeps files: the cluster's, or the
// one a savepoint URI names.
type Storage interface {
	spi.CheckpointStorage
	spi.CheckpointFiles
}

// Source is a complete checkpoint of a running topology.
type Source struct {
	Storage    Storage
	Topology   *topology.Topology
	Plan       *plan.PackingPlan
	Checkpoint int64
}

// Write copies the checkpoint of src into the savepoint name of dst and
// returns its manifest. Keyed state held as the files of an incremental
// checkpoint is converted into a keyed stream in scratch (a local
// directory). The manifest is written last; on failure what was written is
// removed.
func Write(ctx context.Context, src Source, dst spi.CheckpointFiles, name, scratch string) (m *Manifest, err error) {
	t := src.Topology
	m = &Manifest{Version: Version, Topology: t.Name, TopologyID: t.ID, Checkpoint: src.Checkpoint, Created: time.Now().UTC(), Backend: t.StateBackend()}
	w := &writer{ctx: ctx, dst: dst, name: name}
	defer func() {
		if err != nil {
			w.undo()
		}
	}()
	layout := src.Plan.Layout()
	for _, c := range t.Components {
		tasks := byIndex(layout, c.Name)
		comp := Component{Name: c.Name, Parallelism: len(tasks), MaxParallelism: t.MaxParallelism(c.Name)}
		states := map[string]api.StateInfo{}
		for _, task := range tasks {
			key := spi.CheckpointKey{Topology: t.Name, Checkpoint: src.Checkpoint, Task: int32(task)}
			b, err := src.Storage.Load(ctx, key)
			if err != nil {
				return nil, fmt.Errorf("read the manifest of task %d (%s) of checkpoint %d: %w", task, c.Name, src.Checkpoint, err)
			}
			old, err := ckptio.UnmarshalManifest(b)
			if err != nil {
				return nil, fmt.Errorf("task %d (%s) of checkpoint %d: %w", task, c.Name, src.Checkpoint, err)
			}
			tm, err := w.task(src.Storage, t.Name, old, states, filepath.Join(scratch, fmt.Sprintf("task-%d", task)))
			if err != nil {
				return nil, fmt.Errorf("task %d (%s) of checkpoint %d: %w", task, c.Name, src.Checkpoint, err)
			}
			comp.Tasks = append(comp.Tasks, Task{Task: int32(task), Manifest: tm})
		}
		for _, s := range states {
			comp.States = append(comp.States, s)
		}
		sort.Slice(comp.States, func(i, j int) bool { return comp.States[i].Name < comp.States[j].Name })
		m.Components = append(m.Components, comp)
	}
	b, err := m.Encode()
	if err != nil {
		return nil, err
	}
	if _, _, err := w.put(ManifestFile, bytesReader(b)); err != nil {
		return nil, err
	}
	return m, nil
}

// byIndex returns the task ids of component in index order.
func byIndex(l *plan.Layout, component string) []int {
	tasks := slices.Clone(l.Tasks[component])
	sort.Slice(tasks, func(i, j int) bool { return l.IndexOf[tasks[i]] < l.IndexOf[tasks[j]] })
	return tasks
}

// writer writes the files of one savepoint and remembers them.
type writer struct {
	ctx     context.Context
	dst     spi.CheckpointFiles
	name    string
	written []string
}

func (w *writer) undo() {
	ctx := context.WithoutCancel(w.ctx)
	for _, f := range w.written {
		_ = w.dst.DeleteFile(ctx, w.name, f)
	}
}

// task copies the files of one task's checkpoint and returns the task's
// manifest in the savepoint.
func (w *writer) task(src Storage, topo string, old *ckptio.Manifest, states map[string]api.StateInfo, scratch string) (*ckptio.Manifest, error) {
	tm := &ckptio.Manifest{Checkpoint: old.Checkpoint, Task: old.Task, MaxParallelism: old.MaxParallelism, Groups: old.Groups, Backend: old.Backend}
	var incremental []ckptio.File
	for _, f := range old.Files {
		switch {
		case f.Part == ckptio.PartOperator:
			name := ckptio.FileName(old.Checkpoint, old.Task, ckptio.PartOperator)
			var op []byte
			size, sum, err := copyFile(w.ctx, src, topo, f, func(r io.Reader) (int64, uint64, error) {
				return w.put(name, teeBytes(r, &op))
			})
			if err != nil {
				return nil, err
			}
			infos, err := api.DescribeStates(op)
			if err != nil {
				return nil, fmt.Errorf("operator state %s: %w", f.Name, err)
			}
			for _, s := range infos {
				if prev, ok := states[s.Name]; ok {
					s.Entries += prev.Entries
				}
				states[s.Name] = s
			}
			tm.Files = append(tm.Files, ckptio.File{Name: name, Part: f.Part, Size: size, Sum: sum})
		case f.Part == ckptio.PartKeyedStream:
			name := ckptio.FileName(old.Checkpoint, old.Task, ckptio.PartKeyedStream)
			size, sum, err := copyFile(w.ctx, src, topo, f, func(r io.Reader) (int64, uint64, error) { return w.put(name, r) })
			if err != nil {
				return nil, err
			}
			tm.Files = append(tm.Files, ckptio.File{Name: name, Part: f.Part, Size: size, Sum: sum, Groups: f.Groups})
		default:
			incremental = append(incremental, f)
		}
	}
	if len(incremental) > 0 {
		f, err := w.convert(src, topo, old, incremental, scratch)
		if err != nil {
			return nil, err
		}
		tm.Files = append(tm.Files, f)
	}
	return tm, nil
}

// convert restores the files of an incremental checkpoint into a backend
// of its kind in scratch and writes its entries as a keyed stream.
func (w *writer) convert(src Storage, topo string, old *ckptio.Manifest, files []ckptio.File, scratch string) (ckptio.File, error) {
	dir := filepath.Join(scratch, "checkpoint")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ckptio.File{}, err
	}
	defer os.RemoveAll(scratch)
	for _, f := range files {
		local := strings.TrimPrefix(f.Part, ckptio.PartFilesPrefix)
		if _, _, err := copyFile(w.ctx, src, topo, f, func(r io.Reader) (int64, uint64, error) { return writeLocal(filepath.Join(dir, local), r) }); err != nil {
			return ckptio.File{}, err
		}
	}
	b, err := statebackend.Open(old.Backend, statebackend.Options{Dir: filepath.Join(scratch, "db"), MaxParallelism: old.MaxParallelism, Groups: old.Groups})
	if err != nil {
		return ckptio.File{}, err
	}
	defer b.Close()
	inc, ok := b.(statebackend.Incremental)
	if !ok {
		return ckptio.File{}, fmt.Errorf("the checkpoint holds the files of an incremental backend, but backend %q is not one", old.Backend)
	}
	if _, err := inc.RestoreCheckpoints([]string{dir}); err != nil {
		return ckptio.File{}, fmt.Errorf("read the %s checkpoint: %w", old.Backend, err)
	}
	snap, err := b.Snapshot()
	if err != nil {
		return ckptio.File{}, err
	}
	defer snap.Release()
	name := ckptio.FileName(old.Checkpoint, old.Task, ckptio.PartKeyedStream)
	pr, pw := io.Pipe()
	go func() {
		_, err := snap.WriteTo(pw)
		pw.CloseWithError(err)
	}()
	size, sum, err := w.put(name, pr)
	_ = pr.CloseWithError(errors.New("savepoint: upload ended"))
	if err != nil {
		return ckptio.File{}, err
	}
	return ckptio.File{Name: name, Part: ckptio.PartKeyedStream, Size: size, Sum: sum, Groups: old.Groups}, nil
}

// put writes a file of the savepoint from r and returns its size and XXH64.
func (w *writer) put(name string, r io.Reader) (int64, uint64, error) {
	fw, err := w.dst.CreateFile(w.ctx, w.name, name)
	if err != nil {
		return 0, 0, fmt.Errorf("savepoint %s: create %s: %w", w.name, name, err)
	}
	h := xxhash.New()
	n, err := io.Copy(io.MultiWriter(fw, h), r)
	if err == nil {
		err = fw.Commit()
	}
	if err != nil {
		_ = fw.Abort()
		return 0, 0, fmt.Errorf("savepoint %s: write %s: %w", w.name, name, err)
	}
	w.written = append(w.written, name)
	return n, h.Sum64(), nil
}

// copyFile opens f in src's namespace topo, hands its bytes to write and
// checks them against f's size and XXH64: a damaged file is an error
// wrapping ErrCorrupt.
func copyFile(ctx context.Context, src spi.CheckpointFiles, topo string, f ckptio.File, write func(io.Reader) (int64, uint64, error)) (int64, uint64, error) {
	r, err := src.OpenFile(ctx, topo, f.Name)
	if err != nil {
		return 0, 0, fmt.Errorf("open %s: %w", f.Name, err)
	}
	defer r.Close()
	h := xxhash.New()
	size, sum, err := write(io.TeeReader(r, h))
	if err != nil {
		return 0, 0, err
	}
	if size != f.Size || h.Sum64() != f.Sum {
		return 0, 0, fmt.Errorf("file %s: %w: %d bytes hashing to %016x, its manifest says %d hashing to %016x", f.Name, ErrCorrupt, size, h.Sum64(), f.Size, f.Sum)
	}
	return size, sum, nil
}

func writeLocal(path string, r io.Reader) (int64, uint64, error) {
	fh, err := os.Create(path)
	if err != nil {
		return 0, 0, err
	}
	n, err := io.Copy(fh, r)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return n, 0, err
}
