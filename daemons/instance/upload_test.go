package instance

import (
	"context"
	"fmt"
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
	"github.com/egret-stream/egret/daemons/ckptmgr"
	_ "github.com/egret-stream/egret/statebackends/heap"
	_ "github.com/egret-stream/egret/statebackends/pebble"
)

// startCkptMgr runs a checkpoint manager of topology "wc" over localfs.
func startCkptMgr(t *testing.T) (string, spi.CheckpointStorage) {
	t.Helper()
	st, err := localfs.New(spi.Config{localfs.KeyRoot: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "upload")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "ckptmgr.sock")
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ckptmgr.Run(ctx, ckptmgr.Config{TopologyName: "wc", Socket: sock, Storage: st, Ready: func() { close(ready) }}, zaptest.NewLogger(t))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	return sock, st
}

func testInstance(t *testing.T, sock string) *Instance {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &Instance{cfg: Config{CkptMgrSocket: sock, TaskID: 4}, metrics: &Metrics{}, log: zaptest.NewLogger(t), ctx: ctx}
}

// TestUploadRestore: for each backend, a fork taken at a barrier uploads
// off the task's goroutine (the task changes its state meanwhile), its
// manifest stored as the stream manager stores it restores the state as of
// the fork, and the metrics say what was uploaded.
func TestUploadRestore(t *testing.T) {
	for _, backend := range []string{"heap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			sock, st := startCkptMgr(t)
			in := testInstance(t, sock)
			u, err := newUploads(in)
			if err != nil {
				t.Fatal(err)
			}
			defer u.close()
			groups := keygroup.Range{Start: 0, End: 8}
			open := func() statebackend.Backend {
				b, err := statebackend.Open(backend, statebackend.Options{Dir: filepath.Join(t.TempDir(), "db"), MaxParallelism: 8, Groups: groups})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
				return b
			}
			b := open()
			k := func(i int) statebackend.Key {
				return statebackend.Key{Group: i % 8, State: "s", Key: fmt.Appendf(nil, "%d", i)}
			}
			for i := range 5000 {
				if err := b.Put(k(i), []byte("before"), 0); err != nil {
					t.Fatal(err)
				}
			}
			var manifests [][]byte
			for id := int64(1); id <= 2; id++ {
				snap, err := u.fork(id, []byte(fmt.Sprintf("offsets-%d", id)), b, backend, 8, groups)
				if err != nil {
					t.Fatal(err)
				}
				got := make(chan []byte, 1)
				u.upload(snap, func(m []byte, err error) {
					if err != nil {
						t.Error(err)
					}
					got <- m
				})
				for i := range 5000 { // while the upload runs
					if err := b.Put(k(i), []byte(fmt.Sprintf("after-%d", id)), 0); err != nil {
						t.Fatal(err)
					}
				}
				select {
				case m := <-got:
					manifests = append(manifests, m)
				case <-time.After(time.Minute):
					t.Fatal("no upload in a minute")
				}
				if err := st.Store(t.Context(), spi.CheckpointKey{Topology: "wc", Checkpoint: id, Task: 4}, manifests[id-1]); err != nil {
					t.Fatal(err)
				}
			}
			m := in.metrics
			if m.CheckpointFullBytes.Load() == 0 || m.CheckpointUploadedBytes.Load() < m.CheckpointFullBytes.Load() || m.CheckpointAsyncNanos.Load() <= 0 {
				t.Fatalf("metrics: full %d, incremental %d, uploaded %d, async %dns", m.CheckpointFullBytes.Load(),
					m.CheckpointIncrementalBytes.Load(), m.CheckpointUploadedBytes.Load(), m.CheckpointAsyncNanos.Load())
			}
			for id, want := range []string{"before", "after-1"} {
				r := open()
				op, err := u.restore(manifests[id], r, groups, t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				if string(op) != fmt.Sprintf("offsets-%d", id+1) {
					t.Fatalf("operator state %q", op)
				}
				for i := range 5000 {
					v, ok, err := r.Get(k(i), nil)
					if err != nil || !ok || string(v) != want {
						t.Fatalf("checkpoint %d: key %d = %q, %v, %v; want %q", id+1, i, v, ok, err, want)
					}
				}
			}
			if op, err := u.restore(nil, open(), groups, t.TempDir()); err != nil || op != nil {
				t.Fatalf("restore of no checkpoint = %q, %v", op, err)
			}
			if _, err := u.restore([]byte("garbage"), open(), groups, t.TempDir()); err == nil || !strings.Contains(err.Error(), "manifest") {
				t.Fatalf("restore of garbage = %v", err)
			}
		})
	}
}
