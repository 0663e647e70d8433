// Package savepointtest holds the fixtures of the savepoint tests: a
// checkpoint of a small topology written straight into a checkpoint
// storage, with a task of each kind of state (operator state, a pebble
// task's incremental checkpoint, a heap task's keyed stream).
package savepointtest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/checkpoints/localfs"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/ckptio"
	"github.com/egret-stream/egret/daemons/savepoint"
	_ "github.com/egret-stream/egret/statebackends/heap"   // the heap task
	_ "github.com/egret-stream/egret/statebackends/pebble" // the pebble task
)

// MaxParallelism is the count component's number of key groups.
const MaxParallelism = 8

// Localfs opens a localfs checkpoint storage rooted at root.
func Localfs(t testing.TB, root string) savepoint.Storage {
	t.Helper()
	st, err := localfs.New(spi.Config{localfs.KeyRoot: root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st.(savepoint.Storage)
}

// Topology returns topology name: a spout "src" (task 1) and counts tasks
// of a bolt "count" (tasks 2...), in one container.
func Topology(name string, counts int) (*topology.Topology, *plan.PackingPlan) {
	t := &topology.Topology{Name: name, ID: name + "-1", Config: map[string]string{topology.KeyMaxParallelism: "8"}, Components: []topology.Component{
		{Name: "src", Kind: topology.Spout, Parallelism: 1},
		{Name: "count", Kind: topology.Bolt, Parallelism: counts},
	}}
	c := plan.Container{ID: 1, Instances: []plan.Instance{{Component: "src", TaskID: 1, Index: 0}}}
	for i := range counts {
		c.Instances = append(c.Instances, plan.Instance{Component: "count", TaskID: 2 + i, Index: i})
	}
	return t, &plan.PackingPlan{TopologyID: t.ID, Containers: []plan.Container{c}}
}

// Key is the entry the count task of backend keeps in group g.
func Key(g int, backend string) statebackend.Key {
	return statebackend.Key{Group: g, State: "counts", Key: []byte(backend)}
}

// put commits a file of the checkpoint storage and returns its manifest
// entry.
func put(t testing.TB, st savepoint.Storage, topo, name, part string, b []byte, groups keygroup.Range) ckptio.File {
	t.Helper()
	w, err := st.CreateFile(context.Background(), topo, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return ckptio.File{Name: name, Part: part, Size: int64(len(b)), Sum: xxhash.Sum64(b), Groups: groups}
}

func store(t testing.TB, st savepoint.Storage, topo string, m *ckptio.Manifest) {
	t.Helper()
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Store(context.Background(), spi.CheckpointKey{Topology: topo, Checkpoint: m.Checkpoint, Task: m.Task}, b); err != nil {
		t.Fatal(err)
	}
}

// Checkpoint writes checkpoint 5 of Topology("wc", 2) into st: the
// spout's operator state, count task 2 on pebble (an incremental
// checkpoint: its files) and count task 3 on heap (a keyed stream), each
// holding Key(g, backend) = [g] in every group g of its own.
func Checkpoint(t testing.TB, st savepoint.Storage) {
	t.Helper()
	states := api.NewStates()
	pos, err := api.NewState[int, int64](states, "positions")
	if err != nil {
		t.Fatal(err)
	}
	pos.Put(0, 1234)
	op, err := states.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	store(t, st, "wc", &ckptio.Manifest{Checkpoint: 5, Task: 1, MaxParallelism: MaxParallelism, Groups: keygroup.RangeOf(0, 1, MaxParallelism),
		Files: []ckptio.File{put(t, st, "wc", "5-1-operator", ckptio.PartOperator, op, keygroup.Range{})}})

	for i, backend := range []string{"pebble", "heap"} {
		task := int32(2 + i)
		groups := keygroup.RangeOf(i, 2, MaxParallelism)
		b, err := statebackend.Open(backend, statebackend.Options{Dir: filepath.Join(t.TempDir(), "db"), MaxParallelism: MaxParallelism, Groups: groups})
		if err != nil {
			t.Fatal(err)
		}
		for g := groups.Start; g < groups.End; g++ {
			if err := b.Put(Key(g, backend), []byte{byte(g)}, 0); err != nil {
				t.Fatal(err)
			}
		}
		m := &ckptio.Manifest{Checkpoint: 5, Task: task, MaxParallelism: MaxParallelism, Groups: groups, Backend: backend}
		if inc, ok := b.(statebackend.Incremental); ok {
			fc, err := inc.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fc.Files() {
				data, err := os.ReadFile(filepath.Join(fc.Dir(), f.Name))
				if err != nil {
					t.Fatal(err)
				}
				m.Files = append(m.Files, put(t, st, "wc", ckptio.FileName(5, task, "inc-"+f.Name), ckptio.PartFilesPrefix+f.Name, data, groups))
			}
			fc.Release()
		} else {
			snap, err := b.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := snap.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			snap.Release()
			m.Files = append(m.Files, put(t, st, "wc", ckptio.FileName(5, task, "keyed"), ckptio.PartKeyedStream, buf.Bytes(), groups))
		}
		_ = b.Close()
		store(t, st, "wc", m)
	}
}
