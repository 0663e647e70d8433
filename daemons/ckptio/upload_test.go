package ckptio_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/checkpoints/localfs"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/daemons/ckptio"
	"github.com/egret-stream/egret/daemons/ckptmgr"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
	_ "github.com/egret-stream/egret/statebackends/heap"
	_ "github.com/egret-stream/egret/statebackends/pebble"
)

const topo = "wc"

// manager runs a checkpoint manager over localfs below root.
type manager struct {
	st     spi.CheckpointStorage
	socket string
	srv    *ckptmgr.Server
}

func startManager(t *testing.T, root string) *manager {
	t.Helper()
	st, err := localfs.New(spi.Config{localfs.KeyRoot: root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "ckptio")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "ckptmgr.sock")
	ready := make(chan struct{})
	srv, err := ckptmgr.New(ckptmgr.Config{TopologyName: topo, Socket: sock, Storage: st, Ready: func() { close(ready) }}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		st.Close()
		os.RemoveAll(dir)
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("the checkpoint manager did not start")
	}
	return &manager{st: st, socket: sock, srv: srv}
}

func (m *manager) client(t *testing.T) *ckptio.Client {
	c, err := ckptio.NewClient(m.socket, ckptio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// clean asks the checkpoint manager to clean as the stream manager does
// when a checkpoint completes.
func (m *manager) clean(t *testing.T, keepFrom int64) {
	t.Helper()
	c, err := net.Dial("unix", m.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := wire.WriteMessage(c, &egretpb.CleanCheckpointsRequest{KeepFrom: keepFrom}); err != nil {
		t.Fatal(err)
	}
	_, resp, _, err := wire.ReadMessage(bufio.NewReader(c), nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if e := resp.(*egretpb.CleanCheckpointsResponse).GetError(); e != "" {
		t.Fatal(e)
	}
}

// store stores a manifest as the stream manager does.
func (m *manager) store(t *testing.T, man *ckptio.Manifest) {
	t.Helper()
	b, err := man.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.st.Store(t.Context(), spi.CheckpointKey{Topology: topo, Checkpoint: man.Checkpoint, Task: man.Task}, b); err != nil {
		t.Fatal(err)
	}
}

func openBackend(t *testing.T, name string, groups keygroup.Range) statebackend.Backend {
	t.Helper()
	b, err := statebackend.Open(name, statebackend.Options{Dir: filepath.Join(t.TempDir(), "db"), MaxParallelism: 16, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func key(g, i int) statebackend.Key {
	return statebackend.Key{Group: g, State: "count", Key: fmt.Appendf(nil, "key-%d", i)}
}

func fill(t *testing.T, b statebackend.Backend, groups keygroup.Range, n int, version string) {
	t.Helper()
	for i := range n {
		g := groups.Start + i%groups.Len()
		if err := b.Put(key(g, i), fmt.Appendf(nil, "%s-%d", version, i), 0); err != nil {
			t.Fatal(err)
		}
	}
}

func check(t *testing.T, b statebackend.Backend, groups keygroup.Range, n int, version func(i int) string) {
	t.Helper()
	for i := range n {
		g := groups.Start + i%groups.Len()
		v, ok, err := b.Get(key(g, i), nil)
		if err != nil || !ok || string(v) != fmt.Sprintf("%s-%d", version(i), i) {
			t.Fatalf("key %d (group %d) = %q, %v, %v; want version %s", i, g, v, ok, err, version(i))
		}
	}
}

// TestFullRoundTrip: a heap task's keyed snapshot and operator state go
// through the checkpoint manager into storage and back into a new backend.
func TestFullRoundTrip(t *testing.T) {
	m := startManager(t, t.TempDir())
	all := keygroup.Range{Start: 0, End: 16}
	b := openBackend(t, "heap", all)
	fill(t, b, all, 20000, "v1")
	snap, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	up := ckptio.NewUploader(m.client(t), 3)
	fill(t, b, all, 20000, "v2") // after the fork: not in the checkpoint
	man, st, err := up.Upload(t.Context(), ckptio.TaskSnapshot{Checkpoint: 1, Task: 3, MaxParallelism: 16, Groups: all, Backend: "heap",
		Operator: []byte("offsets"), Keyed: snap})
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Files) != 2 || st.Full != st.Uploaded || st.Full != man.Size() {
		t.Fatalf("manifest %+v, stats %+v", man, st)
	}
	m.store(t, man)
	stored, err := m.client(t).Manifest(t.Context(), 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Two tasks rescaled from one: each keeps its groups.
	for _, g := range []keygroup.Range{{Start: 0, End: 8}, {Start: 8, End: 16}} {
		nb := openBackend(t, "heap", g)
		ops, err := ckptio.NewUploader(m.client(t), 9).Restore(t.Context(), []*ckptio.Manifest{stored}, ckptio.RestoreTarget{Backend: nb, Groups: g, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if len(ops) != 1 || string(ops[0]) != "offsets" {
			t.Fatalf("operator states %q", ops)
		}
		n := 0
		for grp := range 16 {
			err := nb.ScanGroup(grp, func(string, []byte, []byte) bool { n++; return true })
			if g.Contains(grp) != (err == nil) {
				t.Fatalf("group %d of task %v: %v", grp, g, err)
			}
		}
		if n != 10000 {
			t.Fatalf("task %v restored %d entries, want 10000", g, n)
		}
	}
	nb := openBackend(t, "heap", all)
	if _, err := up.Restore(t.Context(), []*ckptio.Manifest{stored}, ckptio.RestoreTarget{Backend: nb, Groups: all, Dir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	check(t, nb, all, 20000, func(int) string { return "v1" })
}

func checkpointOf(t *testing.T, b statebackend.Backend, id int64, groups keygroup.Range) ckptio.TaskSnapshot {
	t.Helper()
	inc := b.(statebackend.Incremental)
	fc, err := inc.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	return ckptio.TaskSnapshot{Checkpoint: id, Task: 1, MaxParallelism: 16, Groups: groups, Backend: "pebble", Files: fc, Incarnation: inc.Incarnation()}
}

func value(i int, version string) []byte {
	v := make([]byte, 200)
	copy(v, fmt.Sprintf("%s-%d|", version, i))
	rng := mrand.NewPCG(uint64(i), 7) // incompressible, the same for every version
	for j := 24; j+8 <= len(v); j += 8 {
		binary.LittleEndian.PutUint64(v[j:], rng.Uint64())
	}
	return v
}

// TestIncremental: after the first checkpoint of a pebble task, one whose
// 1% of keys changed uploads a small fraction of the full size, and its
// restore (also rescaled) holds every entry as of the fork.
func TestIncremental(t *testing.T) {
	const n = 100000
	m := startManager(t, t.TempDir())
	all := keygroup.Range{Start: 0, End: 16}
	b := openBackend(t, "pebble", all)
	put := func(i int, version string) {
		if err := b.Put(key(i%16, i), value(i, version), 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		put(i, "v1")
	}
	if err := b.(interface{ Compact() error }).Compact(); err != nil {
		t.Fatal(err)
	}
	up := ckptio.NewUploader(m.client(t), 1)
	m1, st1, err := up.Upload(t.Context(), checkpointOf(t, b, 1, all))
	if err != nil {
		t.Fatal(err)
	}
	if st1.Uploaded != st1.Full || st1.Full < n*100 {
		t.Fatalf("first checkpoint: %+v", st1)
	}
	changed := func(i int) bool { return i%100 == 7 }
	for i := range n {
		if changed(i) {
			put(i, "v2")
		}
	}
	m2, st2, err := up.Upload(t.Context(), checkpointOf(t, b, 2, all))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("full %d bytes, first upload %d, after changing 1%% of the keys %d (%.2f%%), %d of %d files reused",
		st2.Full, st1.Uploaded, st2.Uploaded, 100*float64(st2.Uploaded)/float64(st2.Full), st2.Reused, st2.Files)
	if st2.Uploaded*10 > st2.Full || st2.Reused == 0 {
		t.Fatalf("the incremental checkpoint uploaded %d of %d bytes", st2.Uploaded, st2.Full)
	}
	for i := range n { // after the fork: in no checkpoint
		if i%100 == 8 {
			put(i, "v3")
		}
	}
	m.store(t, m1)
	m.store(t, m2)
	stored, err := m.client(t).Manifest(t.Context(), 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	nb := openBackend(t, "pebble", all)
	if _, err := ckptio.NewUploader(m.client(t), 1).Restore(t.Context(), []*ckptio.Manifest{stored}, ckptio.RestoreTarget{Backend: nb, Groups: all, Dir: filepath.Dir(t.TempDir())}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		want := value(i, map[bool]string{false: "v1", true: "v2"}[changed(i)])
		v, ok, err := nb.Get(key(i%16, i), nil)
		if err != nil || !ok || string(v) != string(want) {
			t.Fatalf("restored key %d = %.12q, %v, %v", i, v, ok, err)
		}
	}
	// A third checkpoint, then the first expires: the files only it
	// named are deleted, those the retained ones share are kept, and
	// both retained checkpoints restore.
	for i := range n {
		if i%100 == 9 {
			put(i, "v4")
		}
	}
	if err := b.(interface{ Compact() error }).Compact(); err != nil { // rewrites every table: nothing shared with 2
		t.Fatal(err)
	}
	m3, st3, err := up.Upload(t.Context(), checkpointOf(t, b, 3, all))
	if err != nil {
		t.Fatal(err)
	}
	m.store(t, m3)
	onlyFirst, shared := 0, 0
	names := map[string]bool{}
	for _, f := range append(m2.Files, m3.Files...) {
		names[f.Name] = true
	}
	for _, f := range m1.Files {
		if names[f.Name] {
			shared++
		} else {
			onlyFirst++
		}
	}
	if onlyFirst == 0 || shared == 0 {
		t.Fatalf("checkpoint 1 has %d files of its own and %d shared; the test needs both", onlyFirst, shared)
	}
	m.clean(t, 2)
	listed, err := m.st.(spi.CheckpointFiles).ListFiles(t.Context(), topo)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(names) {
		t.Fatalf("after the clean %d files are stored, the retained checkpoints name %d (m3 uploaded %d of %d bytes)", len(listed), len(names), st3.Uploaded, st3.Full)
	}
	for _, f := range listed {
		if !names[f.Name] {
			t.Fatalf("file %s survived the clean, no retained checkpoint names it", f.Name)
		}
	}
	if n := m.srv.Stats().FilesDeleted.Load(); n != int64(onlyFirst) {
		t.Fatalf("ckptmgr.files.deleted = %d, want %d", n, onlyFirst)
	}
	for id, version := range map[int64]func(int) string{
		2: func(i int) string { return map[bool]string{false: "v1", true: "v2"}[changed(i)] },
		3: func(i int) string {
			switch {
			case changed(i):
				return "v2"
			case i%100 == 8:
				return "v3"
			case i%100 == 9:
				return "v4"
			}
			return "v1"
		},
	} {
		sm, err := m.client(t).Manifest(t.Context(), id, 1)
		if err != nil {
			t.Fatal(err)
		}
		rb := openBackend(t, "pebble", all)
		if _, err := ckptio.NewUploader(m.client(t), 1).Restore(t.Context(), []*ckptio.Manifest{sm}, ckptio.RestoreTarget{Backend: rb, Groups: all, Dir: t.TempDir()}); err != nil {
			t.Fatalf("restore of retained checkpoint %d: %v", id, err)
		}
		for i := range n {
			v, ok, err := rb.Get(key(i%16, i), nil)
			if err != nil || !ok || string(v) != string(value(i, version(i))) {
				t.Fatalf("checkpoint %d: key %d = %.12q, %v, %v", id, i, v, ok, err)
			}
		}
	}
	if _, err := m.client(t).Manifest(t.Context(), 1, 1); !errors.Is(err, ckptio.ErrNotFound) {
		t.Fatalf("the expired checkpoint's manifest: %v", err)
	}

	// Rescaled to two tasks: each restores only its groups.
	for _, g := range []keygroup.Range{{Start: 0, End: 5}, {Start: 5, End: 16}} {
		rb := openBackend(t, "pebble", g)
		if _, err := ckptio.NewUploader(m.client(t), 1).Restore(t.Context(), []*ckptio.Manifest{stored}, ckptio.RestoreTarget{Backend: rb, Groups: g, Dir: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
		count := 0
		for grp := range 16 {
			err := rb.ScanGroup(grp, func(string, []byte, []byte) bool { count++; return true })
			if g.Contains(grp) != (err == nil) {
				t.Fatalf("group %d of task %v: %v", grp, g, err)
			}
		}
		if want := n * g.Len() / 16; count != want {
			t.Fatalf("task %v restored %d entries, want %d", g, count, want)
		}
	}
}

// TestRescaleMerge: two pebble tasks of groups [0,8) and [8,16)
// checkpoint incrementally; a task of [4,12) after a rescale restores from
// both manifests and holds exactly the entries of its groups.
func TestRescaleMerge(t *testing.T) {
	const n = 20000
	m := startManager(t, t.TempDir())
	var manifests []*ckptio.Manifest
	for task, g := range []keygroup.Range{{Start: 0, End: 8}, {Start: 8, End: 16}} {
		b := openBackend(t, "pebble", g)
		for i := range n {
			if grp := i % 16; g.Contains(grp) {
				if err := b.Put(key(grp, i), value(i, "v1"), 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		snap := checkpointOf(t, b, 5, g)
		snap.Task = int32(task)
		man, _, err := ckptio.NewUploader(m.client(t), int32(task)).Upload(t.Context(), snap)
		if err != nil {
			t.Fatal(err)
		}
		m.store(t, man)
		stored, err := m.client(t).Manifest(t.Context(), 5, int32(task))
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, stored)
	}
	g := keygroup.Range{Start: 4, End: 12}
	rb := openBackend(t, "pebble", g)
	target := ckptio.RestoreTarget{Backend: rb, Groups: g, Dir: t.TempDir()}
	up := ckptio.NewUploader(m.client(t), 9)
	// Refused before anything is read into the backend: an old task
	// missing (its groups would be lost), another max parallelism, a
	// manifest of another checkpoint.
	for _, c := range []struct {
		old     []int32
		maxPar  int
		problem string
	}{
		{[]int32{0}, 16, "hold 4 of the task's 8 key groups"},
		{[]int32{0, 1}, 32, "max parallelism cannot change"},
		{[]int32{0, 7}, 16, "old task 7"},
	} {
		if _, err := up.RestoreRescaled(t.Context(), 5, c.old, c.maxPar, target); err == nil || !strings.Contains(err.Error(), c.problem) {
			t.Errorf("RestoreRescaled(%v, max %d) = %v, want an error with %q", c.old, c.maxPar, err, c.problem)
		}
	}
	if err := ckptio.CheckRescale(manifests, 6, []int32{0, 1}, 16, target); err == nil {
		t.Error("CheckRescale accepted the manifests of checkpoint 5 for checkpoint 6")
	}
	ops, err := up.RestoreRescaled(t.Context(), 5, []int32{0, 1}, 16, target)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 {
		t.Fatalf("%d operator states, want one per old task", len(ops))
	}
	count := 0
	for grp := range 16 {
		err := rb.ScanGroup(grp, func(_ string, k, v []byte) bool {
			count++
			return true
		})
		if g.Contains(grp) != (err == nil) {
			t.Fatalf("group %d: %v", grp, err)
		}
	}
	if want := n / 2; count != want {
		t.Fatalf("the rescaled task holds %d entries, want %d", count, want)
	}
	for i := range n {
		if grp := i % 16; g.Contains(grp) {
			v, ok, err := rb.Get(key(grp, i), nil)
			if err != nil || !ok || string(v) != string(value(i, "v1")) {
				t.Fatalf("key %d = %.12q, %v, %v", i, v, ok, err)
			}
		}
	}
}

// TestIncrementalAfterRestore: the first checkpoint of a pebble task
// restored from a checkpoint uploads only the tables that changed since
// (it reuses the restored tables, which keep their names and bytes), and
// it restores with every entry.
func TestIncrementalAfterRestore(t *testing.T) {
	const n = 50000
	m := startManager(t, t.TempDir())
	all := keygroup.Range{Start: 0, End: 16}
	put := func(b statebackend.Backend, i int, version string) {
		if err := b.Put(key(i%16, i), value(i, version), 0); err != nil {
			t.Fatal(err)
		}
	}
	b := openBackend(t, "pebble", all)
	for i := range n {
		put(b, i, "v1")
	}
	if err := b.(interface{ Compact() error }).Compact(); err != nil {
		t.Fatal(err)
	}
	m1, st1, err := ckptio.NewUploader(m.client(t), 1).Upload(t.Context(), checkpointOf(t, b, 1, all))
	if err != nil {
		t.Fatal(err)
	}
	m.store(t, m1)
	// A new process of the task restores checkpoint 1 (its restore
	// directory on the backend's file system: the download becomes the
	// database), changes 1% of the keys and checkpoints.
	restore := func(up *ckptio.Uploader, id int64) statebackend.Backend {
		stored, err := m.client(t).Manifest(t.Context(), id, 1)
		if err != nil {
			t.Fatal(err)
		}
		nb := openBackend(t, "pebble", all)
		if _, err := up.Restore(t.Context(), []*ckptio.Manifest{stored}, ckptio.RestoreTarget{Backend: nb, Groups: all, Dir: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
		return nb
	}
	up := ckptio.NewUploader(m.client(t), 1)
	nb := restore(up, 1)
	changed := func(i int) bool { return i%100 == 3 }
	for i := range n {
		if changed(i) {
			put(nb, i, "v2")
		}
	}
	m2, st2, err := up.Upload(t.Context(), checkpointOf(t, nb, 2, all))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checkpoint restored: %d bytes; the next one after changing 1%% of the keys: %d of %d bytes uploaded (%.2f%%), %d of %d files reused",
		st1.Full, st2.Uploaded, st2.Full, 100*float64(st2.Uploaded)/float64(st2.Full), st2.Reused, st2.Files)
	if st2.Uploaded*10 > st2.Full || st2.Reused == 0 {
		t.Fatalf("the first checkpoint after the restore uploaded %d of %d bytes (%d files reused)", st2.Uploaded, st2.Full, st2.Reused)
	}
	m.store(t, m2)
	again := restore(ckptio.NewUploader(m.client(t), 1), 2)
	for i := range n {
		want := value(i, map[bool]string{false: "v1", true: "v2"}[changed(i)])
		v, ok, err := again.Get(key(i%16, i), nil)
		if err != nil || !ok || string(v) != string(want) {
			t.Fatalf("restored key %d = %.12q, %v, %v", i, v, ok, err)
		}
	}
}

// TestLocalCopies: a task restarted in its container (a new uploader over
// the same local directory) restores the files of an incremental
// checkpoint from its local copies, reading none from the storage; a
// damaged local copy is downloaded again; the state restored is whole.
func TestLocalCopies(t *testing.T) {
	const n = 20000
	m := startManager(t, t.TempDir())
	all := keygroup.Range{Start: 0, End: 16}
	local := filepath.Join(t.TempDir(), "task-1.local")
	b := openBackend(t, "pebble", all)
	for i := range n {
		if err := b.Put(key(i%16, i), value(i, "v1"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.(interface{ Compact() error }).Compact(); err != nil {
		t.Fatal(err)
	}
	up := ckptio.NewUploader(m.client(t), 1)
	if err := up.KeepLocalCopies(local); err != nil {
		t.Fatal(err)
	}
	m1, _, err := up.Upload(t.Context(), checkpointOf(t, b, 1, all))
	if err != nil {
		t.Fatal(err)
	}
	restore := func() (downloaded int64) {
		t.Helper()
		before := m.srv.Stats().FilesRead.Load()
		nb := openBackend(t, "pebble", all)
		again := ckptio.NewUploader(m.client(t), 1)
		if err := again.KeepLocalCopies(local); err != nil {
			t.Fatal(err)
		}
		if _, err := again.Restore(t.Context(), []*ckptio.Manifest{m1}, ckptio.RestoreTarget{Backend: nb, Groups: all, Dir: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			v, ok, err := nb.Get(key(i%16, i), nil)
			if err != nil || !ok || string(v) != string(value(i, "v1")) {
				t.Fatalf("restored key %d = %.12q, %v, %v", i, v, ok, err)
			}
		}
		return m.srv.Stats().FilesRead.Load() - before
	}
	if got := restore(); got != 0 {
		t.Fatalf("a restore with every file copied locally read %d files from the storage", got)
	}
	var victim string
	for _, f := range m1.Files {
		if strings.HasSuffix(f.Name, ".sst") {
			victim = filepath.Join(local, f.Name)
		}
	}
	if err := os.WriteFile(victim, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := restore(); got != 1 {
		t.Fatalf("a restore with one damaged local copy read %d files from the storage, want 1", got)
	}
}
