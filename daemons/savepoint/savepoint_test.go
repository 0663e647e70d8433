package savepoint_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/checkpoints/localfs"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/ckptio"
	"github.com/egret-stream/egret/daemons/savepoint"
	_ "github.com/egret-stream/egret/statebackends/heap"
	_ "github.com/egret-stream/egret/statebackends/pebble"
	"github.com/egret-stream/egret/test/savepointtest"
)

const maxPar = savepointtest.MaxParallelism

var (
	storage      = savepointtest.Localfs
	testTopology = savepointtest.Topology
	checkpoint   = savepointtest.Checkpoint
	key          = savepointtest.Key
)

// restoreInto reads a task's keyed stream of a stored checkpoint into a
// backend of kind backend and returns it.
func restoreInto(t *testing.T, st savepoint.Storage, topo string, id int64, task int32, backend string) statebackend.Backend {
	t.Helper()
	b, err := st.Load(context.Background(), spi.CheckpointKey{Topology: topo, Checkpoint: id, Task: task})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ckptio.UnmarshalManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := statebackend.Open(backend, statebackend.Options{Dir: filepath.Join(t.TempDir(), "db"), MaxParallelism: maxPar, Groups: m.Groups})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kb.Close() })
	for _, f := range m.Files {
		if f.Part != ckptio.PartKeyedStream {
			if f.Part != ckptio.PartOperator {
				t.Fatalf("task %d: part %q in a restored savepoint", task, f.Part)
			}
			continue
		}
		r, err := st.OpenFile(context.Background(), topo, f.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := kb.Restore(r); err != nil {
			t.Fatal(err)
		}
		_ = r.Close()
	}
	return kb
}

// TestWriteSeed: a checkpoint with an incremental (pebble) task and a
// heap task becomes a savepoint of keyed streams only, which seeds a new
// topology's storage: each new task reads back its key groups' entries,
// in the other backend too; the states are described.
func TestWriteSeed(t *testing.T) {
	ctx := context.Background()
	cluster := storage(t, t.TempDir())
	checkpoint(t, cluster)
	topo, pp := testTopology("wc", 2)

	spRoot := t.TempDir()
	loc, err := savepoint.Parse(filepath.Join(spRoot, "sp1"))
	if err != nil {
		t.Fatal(err)
	}
	dst := storage(t, loc.Root)
	m, err := savepoint.Write(ctx, savepoint.Source{Storage: cluster, Topology: topo, Plan: pp, Checkpoint: 5}, dst, loc.Name, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, err := savepoint.Read(ctx, dst, loc)
	if err != nil {
		t.Fatal(err)
	}
	if err := savepoint.Verify(ctx, dst, loc, got); err != nil {
		t.Fatal(err)
	}
	if got.Checkpoint != 5 || got.Topology != "wc" || len(got.Components) != 2 || got.Size() != m.Size() {
		t.Fatalf("read back %+v", got)
	}
	src := got.Component("src")
	if len(src.States) != 1 || src.States[0].Name != "positions" || src.States[0].Keyed || src.States[0].Entries != 1 {
		t.Fatalf("spout states %+v", src.States)
	}
	for _, task := range got.Component("count").Tasks {
		if len(task.Manifest.Files) != 1 || task.Manifest.Files[0].Part != ckptio.PartKeyedStream {
			t.Fatalf("count task %d: files %+v, want one keyed stream", task.Task, task.Manifest.Files)
		}
	}

	// Seed a new topology (other name, same shape) and read it back: the
	// pebble task's entries into heap, the heap task's into pebble.
	newTopo, newPlan := testTopology("wc2", 2)
	if err := savepoint.Check(got, newTopo, newPlan, false); err != nil {
		t.Fatal(err)
	}
	tasks, undo, err := savepoint.Seed(ctx, got, dst, loc.Name, cluster, newTopo, newPlan)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(tasks) != "map[count:[2 3] src:[1]]" {
		t.Fatalf("seeded tasks %v", tasks)
	}
	for i, backend := range []string{"heap", "pebble"} {
		task := int32(2 + i)
		kb := restoreInto(t, cluster, "wc2", 5, task, backend)
		groups := keygroup.RangeOf(i, 2, maxPar)
		old := []string{"pebble", "heap"}[i]
		for g := groups.Start; g < groups.End; g++ {
			v, ok, err := kb.Get(key(g, old), nil)
			if err != nil || !ok || !bytes.Equal(v, []byte{byte(g)}) {
				t.Fatalf("task %d on %s: group %d: %v %v %v", task, backend, g, v, ok, err)
			}
		}
	}
	undo()
	if ids, err := cluster.List(ctx, "wc2"); err != nil || len(ids) != 0 {
		t.Fatalf("after undo: checkpoints %v %v", ids, err)
	}
	if files, err := cluster.ListFiles(ctx, "wc2"); err != nil || len(files) != 0 {
		t.Fatalf("after undo: files %v %v", files, err)
	}

	// Refusals before anything is written.
	for _, tc := range []struct {
		counts int
		rename string
		allow  bool
		want   string
	}{
		{counts: 3},
		{counts: 9, want: "parallelism 9 is above its max parallelism 8"},
		{counts: 2, rename: "counter", want: "component(s) count, which the topology does not have"},
		{counts: 2, rename: "counter", allow: true},
	} {
		nt, np := testTopology("wc3", tc.counts)
		if tc.rename != "" {
			nt.Components[1].Name = tc.rename
			for i := range np.Containers[0].Instances[1:] {
				np.Containers[0].Instances[1+i].Component = tc.rename
			}
		}
		err := savepoint.Check(got, nt, np, tc.allow)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("check %+v: %v", tc, err)
		}
	}
	nt, np := testTopology("wc3", 2)
	nt.Config[topology.KeyMaxParallelism] = "16"
	if err := savepoint.Check(got, nt, np, false); err == nil || !strings.Contains(err.Error(), "max parallelism 8 in the savepoint and 16") {
		t.Errorf("check with another max parallelism: %v", err)
	}

	// A damaged file is found when it is copied; delete removes all.
	f := got.Component("count").Tasks[0].Manifest.Files[0]
	path, _ := dst.(*localfs.Storage).FilePath(loc.Name, f.Name)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := savepoint.Seed(ctx, got, dst, loc.Name, cluster, newTopo, newPlan); !errors.Is(err, savepoint.ErrCorrupt) {
		t.Fatalf("seed from a damaged file: %v", err)
	}
	if files, _ := cluster.ListFiles(ctx, "wc2"); len(files) != 0 {
		t.Fatalf("a failed seed left files %v", files)
	}
	if err := savepoint.Delete(ctx, dst, loc); err != nil {
		t.Fatal(err)
	}
	if _, err := savepoint.Read(ctx, dst, loc); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("read after delete: %v", err)
	}
}

// TestSeedRescaled: a component whose tasks differ (3 count tasks from a
// savepoint of 2) has the saved manifests stored under fresh ids above
// every task, recorded as its tasks; the others keep their ids.
func TestSeedRescaled(t *testing.T) {
	ctx := context.Background()
	cluster := storage(t, t.TempDir())
	checkpoint(t, cluster)
	topo, pp := testTopology("wc", 2)
	dst := storage(t, t.TempDir())
	m, err := savepoint.Write(ctx, savepoint.Source{Storage: cluster, Topology: topo, Plan: pp, Checkpoint: 5}, dst, "sp", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	nt, np := testTopology("wc3", 3) // count tasks 2, 3, 4
	if err := savepoint.Check(m, nt, np, false); err != nil {
		t.Fatal(err)
	}
	tasks, _, err := savepoint.Seed(ctx, m, dst, "sp", cluster, nt, np)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(tasks) != "map[count:[5 6] src:[1]]" {
		t.Fatalf("seeded tasks %v, want count at fresh ids 5 and 6", tasks)
	}
	for i, task := range []int32{5, 6} {
		b, err := cluster.Load(ctx, spi.CheckpointKey{Topology: "wc3", Checkpoint: 5, Task: task})
		if err != nil {
			t.Fatal(err)
		}
		tm, err := ckptio.UnmarshalManifest(b)
		if err != nil {
			t.Fatal(err)
		}
		if tm.Task != task || tm.Groups != keygroup.RangeOf(i, 2, maxPar) || len(tm.Files) != 1 || !strings.HasPrefix(tm.Files[0].Name, fmt.Sprintf("5-%d-", task)) {
			t.Fatalf("manifest of fresh task %d: %+v", task, tm)
		}
	}
	for _, task := range []int32{2, 3, 4} { // the new count tasks read the fresh ones
		if _, err := cluster.Load(ctx, spi.CheckpointKey{Topology: "wc3", Checkpoint: 5, Task: task}); !errors.Is(err, spi.ErrNotFound) {
			t.Fatalf("task %d of a rescaled component has a manifest of its own: %v", task, err)
		}
	}
}

// TestWriteMissingTask: a checkpoint a task has no manifest of is not
// saved, and nothing is left of the savepoint.
func TestWriteMissingTask(t *testing.T) {
	ctx := context.Background()
	cluster := storage(t, t.TempDir())
	checkpoint(t, cluster)
	topo, pp := testTopology("wc", 3) // task 4 never stored
	dst := storage(t, t.TempDir())
	if _, err := savepoint.Write(ctx, savepoint.Source{Storage: cluster, Topology: topo, Plan: pp, Checkpoint: 5}, dst, "sp", t.TempDir()); err == nil || !strings.Contains(err.Error(), "task 4") {
		t.Fatalf("write with a missing task: %v", err)
	}
	if files, _ := dst.ListFiles(ctx, "sp"); len(files) != 0 {
		t.Fatalf("a failed write left %v", files)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct{ in, storage, root, name, err string }{
		{in: "/b/sp-1", storage: "localfs", root: "/b", name: "sp-1"},
		{in: "file:///b/c/sp_2", storage: "localfs", root: "/b/c", name: "sp_2"},
		{in: "hdfs://nn:8020/egret/sp", storage: "hdfs", root: "/egret", name: "sp"},
		{in: "hdfs://nn/egret/sp", err: "port"},
		{in: "s3://b/sp", err: "scheme"},
		{in: "/b/9sp", err: "name"},
		{in: "/", err: "names no savepoint"},
		{in: "file://host/b/sp", err: "no host"},
	} {
		l, err := savepoint.Parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) = %+v, %v; want an error with %q", tc.in, l, err, tc.err)
			}
			continue
		}
		if err != nil || l.Storage != tc.storage || l.Root != tc.root || l.Name != tc.name {
			t.Errorf("Parse(%q) = %+v, %v", tc.in, l, err)
		}
		if again, err := savepoint.Parse(l.URI()); err != nil || again != l {
			t.Errorf("Parse(%q).URI() = %q does not parse back: %+v %v", tc.in, l.URI(), again, err)
		}
	}
}

// sample returns an encoded manifest of the test checkpoint.
func sample(t testing.TB) []byte {
	m := &savepoint.Manifest{Version: savepoint.Version, Topology: "wc", TopologyID: "wc-1", Checkpoint: 5, Backend: "heap",
		Components: []savepoint.Component{{Name: "count", Parallelism: 1, MaxParallelism: maxPar,
			States: []api.StateInfo{{Name: "counts", Keyed: true, Descriptor: "value string int64"}},
			Tasks: []savepoint.Task{{Task: 2, Manifest: &ckptio.Manifest{Checkpoint: 5, Task: 2, MaxParallelism: maxPar, Groups: keygroup.RangeOf(0, 1, maxPar),
				Files: []ckptio.File{{Name: "5-2-keyed", Part: ckptio.PartKeyedStream, Size: 10, Sum: 7, Groups: keygroup.RangeOf(0, 1, maxPar)}}}}}}}}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeDamaged: truncated, changed, foreign and later-version bytes
// are refused with ErrCorrupt.
func TestDecodeDamaged(t *testing.T) {
	b := sample(t)
	if _, err := savepoint.Decode(b); err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(b)
	flipped[len(flipped)-3] ^= 1
	for what, in := range map[string][]byte{
		"truncated": b[:len(b)-1], "changed": flipped, "empty": nil, "foreign": []byte("{\"version\":1}"),
		"later version": append([]byte("EGSP2\n"), b[6:]...),
	} {
		if _, err := savepoint.Decode(in); !errors.Is(err, savepoint.ErrCorrupt) {
			t.Errorf("%s: %v", what, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(sample(f))
	f.Add([]byte("EGSP1\n0000000000000000\n{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := savepoint.Decode(b)
		if err != nil {
			if !errors.Is(err, savepoint.ErrCorrupt) {
				t.Fatalf("error without ErrCorrupt: %v", err)
			}
			return
		}
		again, err := m.Encode()
		if err != nil {
			t.Fatalf("a decoded manifest does not encode: %v", err)
		}
		if _, err := savepoint.Decode(again); err != nil {
			t.Fatalf("re-encoded manifest does not decode: %v", err)
		}
	})
}
