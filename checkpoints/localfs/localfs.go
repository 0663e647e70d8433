package localfs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/checkpoints/internal/blob"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/safepath"
)

// KeyRoot is the config key naming the root directory.
const KeyRoot = "egret.checkpoint.localfs.root"

// Name is the storage's name in egret.checkpoint.storage.
const Name = "localfs"

func init() { spi.RegisterCheckpointStorage(Name, New, configKeys...) }

// Storage keeps checkpoints in files below a root directory.
type Storage struct {
	root   string
	log    *zap.Logger
	closed atomic.Bool
}

var _ spi.CheckpointStorage = (*Storage)(nil)

// New builds the storage from cfg: egret.checkpoint.localfs.root is
// required and made absolute. The directory is created on first store.
func New(cfg spi.Config, log *zap.Logger) (spi.CheckpointStorage, error) {
	root := cfg.String(KeyRoot, "")
	if root == "" {
		return nil, fmt.Errorf("localfs checkpoint storage: config key %s is required (the directory that holds the checkpoints, shared by every container of a topology)", KeyRoot)
	}
	if strings.Contains(root, "${") {
		return nil, fmt.Errorf("localfs checkpoint storage: config key %s = %q has an unsubstituted variable", KeyRoot, root)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("localfs checkpoint storage: config key %s: %w", KeyRoot, err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Storage{root: abs, log: log.With(zap.String("checkpoint_storage", Name))}, nil
}

// Root is the root directory.
func (s *Storage) Root() string { return s.root }

// Path returns the file that holds key's state.
func (s *Storage) Path(key spi.CheckpointKey) (string, error) {
	if err := blob.CheckKey(key); err != nil {
		return "", err
	}
	return safepath.Join(s.root, key.Topology, blob.CheckpointDir(key.Checkpoint), blob.TaskFile(key.Task))
}

func (s *Storage) check(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("localfs checkpoint storage: %w", spi.ErrClosed)
	}
	return ctx.Err()
}

// Store writes state atomically and durably.
func (s *Storage) Store(ctx context.Context, key spi.CheckpointKey, state []byte) error {
	if err := s.store(ctx, key, state); err != nil {
		return fmt.Errorf("localfs checkpoint store of %s checkpoint %d task %d in %s: %w", key.Topology, key.Checkpoint, key.Task, s.root, err)
	}
	return nil
}

func (s *Storage) store(ctx context.Context, key spi.CheckpointKey, state []byte) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	dst, err := s.Path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	f, err := os.CreateTemp(dir, blob.TempPrefix+blob.TaskFile(key.Task)+"-*")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	tmp := f.Name()
	committed := false
	defer func() {
		if !committed {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(blob.Header(state)); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if _, err := f.Write(state); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("rename into place: %w", err)
	}
	committed = true
	// The rename is durable once the directory is; the checkpoint's
	// directory may be new, so its parent is synced too.
	if err := syncDir(dir); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

// syncDir fsyncs a directory; file systems that cannot (EINVAL) are
// accepted as they are.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory to sync it: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Load returns the state of key.
func (s *Storage) Load(ctx context.Context, key spi.CheckpointKey) ([]byte, error) {
	state, err := s.load(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("localfs checkpoint load of %s checkpoint %d task %d from %s: %w", key.Topology, key.Checkpoint, key.Task, s.root, err)
	}
	return state, nil
}

func (s *Storage) load(ctx context.Context, key spi.CheckpointKey) ([]byte, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	p, err := s.Path(key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no state stored: %w", spi.ErrNotFound)
	case err != nil:
		return nil, err
	}
	state, err := blob.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return state, nil
}

// List returns the ids of the topology's checkpoints that hold a task's
// state, ascending.
func (s *Storage) List(ctx context.Context, topology string) ([]int64, error) {
	ids, err := s.list(ctx, topology)
	if err != nil {
		return nil, fmt.Errorf("localfs checkpoint list of %s in %s: %w", topology, s.root, err)
	}
	return ids, nil
}

func (s *Storage) list(ctx context.Context, topology string) ([]int64, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := blob.CheckTopology(topology); err != nil {
		return nil, err
	}
	dir, err := safepath.Join(s.root, topology)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	ids := []int64{}
	for _, e := range entries {
		id, ok := blob.ParseCheckpointDir(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tasks, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(tasks, func(t os.DirEntry) bool { return blob.IsTaskFile(t.Name()) }) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Delete removes every task's state of a checkpoint: the checkpoint's
// directory is first renamed out of sight, then removed.
func (s *Storage) Delete(ctx context.Context, topology string, checkpoint int64) error {
	if err := s.delete(ctx, topology, checkpoint); err != nil {
		return fmt.Errorf("localfs checkpoint delete of %s checkpoint %d in %s: %w", topology, checkpoint, s.root, err)
	}
	return nil
}

func (s *Storage) delete(ctx context.Context, topology string, checkpoint int64) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := blob.CheckTopology(topology); err != nil {
		return err
	}
	if err := blob.CheckCheckpoint(checkpoint); err != nil {
		return err
	}
	dir, err := safepath.Join(s.root, topology, blob.CheckpointDir(checkpoint))
	if err != nil {
		return err
	}
	gone, err := safepath.Join(s.root, topology, deletedPrefix(checkpoint)+randomHex())
	if err != nil {
		return err
	}
	switch err := os.Rename(dir, gone); {
	case errors.Is(err, fs.ErrNotExist):
		s.removeLeftovers(filepath.Dir(dir), checkpoint)
		return nil
	case err != nil:
		return fmt.Errorf("move the checkpoint out of sight: %w", err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("remove %s: %w", gone, err)
	}
	s.removeLeftovers(filepath.Dir(dir), checkpoint)
	s.log.Debug("deleted checkpoint", zap.String("topology", topology), zap.Int64("checkpoint", checkpoint))
	return nil
}

// removeLeftovers removes what deletes of checkpoint interrupted by a
// crash left in the topology's directory. It is best effort: another
// container may be removing them too.
func (s *Storage) removeLeftovers(topoDir string, checkpoint int64) {
	entries, err := os.ReadDir(topoDir)
	if err != nil {
		return
	}
	prefix := deletedPrefix(checkpoint)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(topoDir, e.Name())); err != nil {
			s.log.Warn("could not remove what an interrupted delete left", zap.String("path", filepath.Join(topoDir, e.Name())), zap.Error(err))
		}
	}
}

// deletedPrefix starts the name a checkpoint's directory is renamed to
// while it is deleted.
func deletedPrefix(checkpoint int64) string {
	return blob.TempPrefix + "deleted-" + blob.CheckpointDir(checkpoint) + "-"
}

// Close marks the storage closed; it holds no other resources.
func (s *Storage) Close() error {
	s.closed.Store(true)
	return nil
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Damage replaces the stored bytes of key (header included) with
// damage(bytes), in place. It exists for tests: the conformance suite's
// Damage hook (checkpointtest.Suite.Damage) uses it to check that damaged
// state loads as spi.ErrCorrupt.
func (s *Storage) Damage(key spi.CheckpointKey, damage func([]byte) []byte) error {
	p, err := s.Path(key)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("localfs checkpoint damage: %w", err)
	}
	if err := os.WriteFile(p, damage(b), 0o644); err != nil {
		return fmt.Errorf("localfs checkpoint damage: %w", err)
	}
	return nil
}
