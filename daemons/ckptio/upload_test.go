package ckptio_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/checkpoints/localfs"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/daemons/ckptio"
	"github.com/egret-stream/egret/daemons/ckptmgr"
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
