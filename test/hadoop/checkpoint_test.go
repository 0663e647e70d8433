package hadoop

import (
	"context"
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/checkpoints/checkpointtest"
	ckpthdfs "github.com/egret-stream/egret/checkpoints/hdfs"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/hdfsx"
	"github.com/egret-stream/egret/plugins/plugintest"
)

func checkpointConfig(nn, dir string) spi.Config {
	return spi.Config{
		ckpthdfs.KeyNameNode:    nn,
		ckpthdfs.KeyDirectory:   dir,
		ckpthdfs.KeyReplication: "1",
		ckpthdfs.KeyTimeout:     "30s",
	}
}

func openCheckpoints(t *testing.T, cfg spi.Config) *ckpthdfs.Storage {
	t.Helper()
	st, err := ckpthdfs.New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st.(*ckpthdfs.Storage)
}

// The checkpoint storage conformance suite against the real NameNode,
// damaged state included (rewritten through a superuser client), in
// process and over the plugin boundary (cmd/egret-checkpointstorage-hdfs).
func TestCheckpointStorageConformance(t *testing.T) {
	c := needCluster(t)
	t.Run("InProcess", func(t *testing.T) {
		cfg := checkpointConfig(c.NameNode, "/egret/checkpoints/"+randomName("conformance"))
		hdfsCheckpointSuite(t, cfg, func(context.Context) (spi.CheckpointStorage, error) {
			return ckpthdfs.New(cfg, zaptest.NewLogger(t))
		}).Run(t)
	})
	t.Run("Plugin", func(t *testing.T) {
		dir := t.TempDir()
		plugintest.Install(t, dir, spi.KindCheckpointStorage, "hdfsplugin", plugintest.Build(t, "github.com/egret-stream/egret/cmd/egret-checkpointstorage-hdfs"))
		l := plugintest.NewLoader(t, dir)
		cfg := checkpointConfig(c.NameNode, "/egret/checkpoints/"+randomName("plugin"))
		hdfsCheckpointSuite(t, cfg, func(ctx context.Context) (spi.CheckpointStorage, error) {
			return l.LoadCheckpointStorage(ctx, "hdfsplugin", cfg)
		}).Run(t)
	})
}

func hdfsCheckpointSuite(t *testing.T, cfg spi.Config, open func(context.Context) (spi.CheckpointStorage, error)) checkpointtest.Suite {
	cl := dfs(t)
	paths := openCheckpoints(t, cfg)
	return checkpointtest.Suite{
		Open: open,
		Damage: func(_ context.Context, key spi.CheckpointKey, damage func([]byte) []byte) error {
			p, err := paths.Path(key)
			if err != nil {
				return err
			}
			b, err := cl.ReadFile(p)
			if err != nil {
				return err
			}
			if err := cl.Remove(p); err != nil {
				return err
			}
			b = damage(b)
			if len(b) == 0 {
				// Closing a writer of no bytes never completes.
				return cl.CreateEmptyFile(p)
			}
			w, err := cl.CreateFile(p, 1, 128<<20, 0o644)
			if err != nil {
				return err
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
			return hdfsx.CloseReplicated(context.Background(), w, 30*time.Second)
		},
	}
}

// TestCheckpointStorageLayout: the documented layout, the configured
// replication (2, above the cluster's one DataNode: HDFS records it and
// completes the file at its minimum replication), no temp file left, and
// Delete removes the checkpoint's directory.
func TestCheckpointStorageLayout(t *testing.T) {
	c := needCluster(t)
	cl := dfs(t)
	dir := "/egret/checkpoints/" + randomName("layout")
	cfg := checkpointConfig(c.NameNode, dir)
	cfg[ckpthdfs.KeyReplication] = "2"
	st := openCheckpoints(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := st.Store(ctx, spi.CheckpointKey{Topology: "wc", Checkpoint: 12, Task: 3}, []byte("state")); err != nil {
		t.Fatal(err)
	}
	fi, err := cl.Stat(dir + "/wc/12/3.state")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 16+5 {
		t.Errorf("state file of %d bytes, want the 16-byte header and 5 bytes", fi.Size())
	}
	if got := fi.Sys().(*hdfs.FileStatus).GetBlockReplication(); got != 2 {
		t.Errorf("replication %d, want the configured 2", got)
	}
	entries, err := cl.ReadDir(dir + "/wc/12")
	if err != nil || len(entries) != 1 {
		t.Fatalf("checkpoint directory holds %v (%v), want only 3.state", entries, err)
	}
	// What an interrupted delete of 12 left goes with the next delete of 12.
	if err := cl.MkdirAll(dir+"/wc/.tmp-deleted-12-0123abcd", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "wc", 12); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Stat(dir + "/wc/12"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("checkpoint directory after Delete: %v", err)
	}
	if entries, _ := cl.ReadDir(dir + "/wc"); len(entries) != 0 {
		t.Fatalf("topology directory after Delete holds %v", entries)
	}
}

// TestCheckpointStoragePermissionDenied: a directory the storage's user
// may not write gives an error saying so.
func TestCheckpointStoragePermissionDenied(t *testing.T) {
	c := needCluster(t)
	cl := dfs(t)
	dir := "/egret/checkpoints/" + randomName("denied")
	if err := cl.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := checkpointConfig(c.NameNode, dir)
	cfg[ckpthdfs.KeyUser] = "nobody-" + randomName("u")
	st := openCheckpoints(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := st.Store(ctx, spi.CheckpointKey{Topology: "wc", Checkpoint: 1, Task: 1}, []byte("x"))
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Store as a user without permission = %v, want permission denied", err)
	}
}
