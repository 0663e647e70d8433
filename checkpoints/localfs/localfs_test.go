package localfs_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/checkpoints/checkpointtest"
	"github.com/egret-stream/egret/checkpoints/localfs"
	"github.com/egret-stream/egret/core/spi"
)

func open(t *testing.T, root string) *localfs.Storage {
	t.Helper()
	st, err := localfs.New(spi.Config{localfs.KeyRoot: root}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st.(*localfs.Storage)
}

// Suite returns the conformance suite over storages sharing root, with
// the Damage hook that rewrites the files.
func Suite(t *testing.T, root string) checkpointtest.Suite {
	return checkpointtest.Suite{
		Open: func(context.Context) (spi.CheckpointStorage, error) {
			return localfs.New(spi.Config{localfs.KeyRoot: root}, zaptest.NewLogger(t))
		},
		Damage: func(_ context.Context, key spi.CheckpointKey, damage func([]byte) []byte) error {
			return open(t, root).Damage(key, damage)
		},
	}
}

func TestConformance(t *testing.T) {
	Suite(t, filepath.Join(t.TempDir(), "checkpoints")).Run(t)
}

func TestRegistered(t *testing.T) {
	f, err := spi.LookupCheckpointStorage("localfs")
	if err != nil {
		t.Fatal(err)
	}
	st, err := f(spi.Config{localfs.KeyRoot: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  spi.Config
		want string
	}{
		{"missing", spi.Config{}, localfs.KeyRoot + " is required"},
		{"unsubstituted", spi.Config{localfs.KeyRoot: "/x/${CLUSTER}"}, "unsubstituted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := localfs.New(tc.cfg, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%v) = %v; want an error mentioning %q", tc.cfg, err, tc.want)
			}
		})
	}
}

// TestRootKey: the key's directory is where the state goes, in the
// documented layout, and a relative root is made absolute.
func TestRootKey(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	st := open(t, "rel/ckpt")
	if want := filepath.Join(dir, "rel", "ckpt"); st.Root() != want {
		t.Fatalf("Root = %q, want %q", st.Root(), want)
	}
	ctx := context.Background()
	if err := st.Store(ctx, spi.CheckpointKey{Topology: "wc", Checkpoint: 42, Task: 7}, []byte("state")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "rel", "ckpt", "wc", "42", "7.state"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 16+5 || string(b[16:]) != "state" || string(b[:4]) != "EGC1" {
		t.Fatalf("stored file = %q, want the 16-byte header and the state", b)
	}
	// Nothing else is left in the checkpoint's directory (no temp file).
	entries, _ := os.ReadDir(filepath.Join(dir, "rel", "ckpt", "wc", "42"))
	if len(entries) != 1 {
		t.Fatalf("checkpoint directory holds %v, want only 7.state", entries)
	}
}

// TestLeftovers: files a crash leaves behind (a temp file of a store, a
// half-removed deleted checkpoint, stray files) are not checkpoints.
func TestLeftovers(t *testing.T) {
	root := t.TempDir()
	st := open(t, root)
	ctx := context.Background()
	topo := filepath.Join(root, "wc")
	for _, d := range []string{"5", ".tmp-deleted-3-abcd", "007", "notanumber"} {
		if err := os.MkdirAll(filepath.Join(topo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// 5 holds only a temp file of an interrupted store.
	if err := os.WriteFile(filepath.Join(topo, "5", ".tmp-1.state-123"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(topo, ".tmp-deleted-3-abcd", "1.state"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(topo, "007", "1.state"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(topo, "9"), []byte("a file, not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	ids, err := st.List(ctx, "wc")
	if err != nil || len(ids) != 0 {
		t.Fatalf("List = %v, %v; want no checkpoint", ids, err)
	}
	if _, err := st.Load(ctx, spi.CheckpointKey{Topology: "wc", Checkpoint: 5, Task: 1}); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("Load of an interrupted store = %v, want ErrNotFound", err)
	}
	if err := st.Store(ctx, spi.CheckpointKey{Topology: "wc", Checkpoint: 5, Task: 2}, []byte("s")); err != nil {
		t.Fatal(err)
	}
	if ids, _ := st.List(ctx, "wc"); !slices.Equal(ids, []int64{5}) {
		t.Fatalf("List = %v, want [5]", ids)
	}
	// Delete removes the temp file with the checkpoint.
	if err := st.Delete(ctx, "wc", 5); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(topo, "5")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("checkpoint directory after Delete: %v", err)
	}
	// Delete of 3 (absent) removes what an interrupted delete of 3 left;
	// the other entries stay.
	if err := st.Delete(ctx, "wc", 3); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(topo)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"007", "9", "notanumber"}) {
		t.Fatalf("after Delete of 3 the topology directory holds %v", left)
	}
}

// TestNothingOutsideRoot: hostile names create nothing outside the root.
func TestNothingOutsideRoot(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	st := open(t, root)
	ctx := context.Background()
	for _, name := range []string{"..", "../escape", "/tmp/escape", "a/../../escape"} {
		_ = st.Store(ctx, spi.CheckpointKey{Topology: name, Checkpoint: 1, Task: 1}, []byte("x"))
		_ = st.Delete(ctx, name, 1)
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "root" {
			t.Errorf("%s was created next to the root", e.Name())
		}
	}
}

// TestPermissionDenied: a root the process may not write gives an error
// that says so (the checkpoint manager answers it instead of crashing).
func TestPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	root := t.TempDir()
	if err := os.Chmod(root, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(root, 0o755) })
	st := open(t, root)
	err := st.Store(context.Background(), spi.CheckpointKey{Topology: "wc", Checkpoint: 1, Task: 1}, []byte("x"))
	if !errors.Is(err, fs.ErrPermission) || !errors.Is(err, syscall.EACCES) {
		t.Fatalf("Store in a read-only root = %v, want permission denied", err)
	}
	if !strings.Contains(err.Error(), "wc checkpoint 1 task 1") {
		t.Errorf("error %q does not name the key", err)
	}
}
