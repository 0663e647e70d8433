package pebble

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/egret-stream/egret/core/statebackend"
)

var _ statebackend.Incremental = (*Backend)(nil)

// Incarnation names the database's current life (a new one after Open,
// Clear and RestoreCheckpoints): its table numbers are unique within it.
func (b *Backend) Incarnation() string { return b.incarnation }

func newIncarnation() string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(r[:])
}

// Checkpoint flushes the memory table (the backend keeps no write-ahead
// log) and makes a pebble checkpoint next to the database: hard links to
// its tables, a copy of its table list and options. Tables (.sst) and blob
// files are immutable: they are the stable files.
func (b *Backend) Checkpoint() (statebackend.FileCheckpoint, error) {
	if err := b.db.Flush(); err != nil {
		return nil, fmt.Errorf("pebble state backend: flush before a checkpoint: %w", err)
	}
	b.ckpts++
	dir := fmt.Sprintf("%s.ckpt-%s-%d", b.dir, b.incarnation, b.ckpts)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("pebble state backend: checkpoint: %w", err)
	}
	if err := b.db.Checkpoint(dir); err != nil {
		return nil, fmt.Errorf("pebble state backend: checkpoint into %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pebble state backend: checkpoint: %w", err)
	}
	c := &fileCheckpoint{dir: dir}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("pebble state backend: checkpoint: unexpected entry %s in %s (%v)", e.Name(), dir, err)
		}
		c.files = append(c.files, statebackend.CheckpointFile{Name: e.Name(), Size: fi.Size(),
			Stable: strings.HasSuffix(e.Name(), ".sst") || strings.HasSuffix(e.Name(), ".blob")})
	}
	return c, nil
}

type fileCheckpoint struct {
	dir   string
	files []statebackend.CheckpointFile
	once  sync.Once
}

func (c *fileCheckpoint) Dir() string                          { return c.dir }
func (c *fileCheckpoint) Files() []statebackend.CheckpointFile { return c.files }
func (c *fileCheckpoint) Release()                             { c.once.Do(func() { _ = os.RemoveAll(c.dir) }) }

// RestoreCheckpoints replaces the state with the task's key groups of the
// checkpoint directories: the first becomes the database (its entries of
// other groups are deleted by two range deletions), the entries of the
// task's groups in the others are copied in (all are copied when the first
// is on another file system and cannot be moved into place).
func (b *Backend) RestoreCheckpoints(dirs []string) error {
	if len(dirs) == 0 {
		return errors.New("pebble state backend: restore from no checkpoint")
	}
	if err := b.Close(); err != nil {
		return err
	}
	lo, hi := statebackend.AppendGroupPrefix(nil, b.groups.Start), statebackend.AppendGroupPrefix(nil, b.groups.End)
	copyFrom := dirs[1:]
	if err := os.Rename(dirs[0], b.dir); err != nil {
		// Another file system: every checkpoint is copied in.
		copyFrom = dirs
		if err := b.open(); err != nil {
			return fmt.Errorf("pebble state backend: restore: %w", err)
		}
	} else {
		if err := b.open(); err != nil {
			return fmt.Errorf("pebble state backend: restore: %w", err)
		}
		if err := b.db.DeleteRange([]byte{}, lo, pebble.NoSync); err != nil {
			return fmt.Errorf("pebble state backend: restore: drop other key groups: %w", err)
		}
		if err := b.db.DeleteRange(hi, []byte{0xff, 0xff, 0xff}, pebble.NoSync); err != nil {
			return fmt.Errorf("pebble state backend: restore: drop other key groups: %w", err)
		}
	}
	for _, dir := range copyFrom {
		if err := b.copyGroups(dir, lo, hi); err != nil {
			return err
		}
	}
	return nil
}

// copyGroups copies the entries in [lo, hi) of the checkpoint in dir.
func (b *Backend) copyGroups(dir string, lo, hi []byte) error {
	src, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, DisableWAL: true, Logger: quiet{pebble.DefaultLogger}})
	if err != nil {
		return fmt.Errorf("pebble state backend: restore: open %s: %w", filepath.Base(dir), err)
	}
	defer src.Close()
	it, err := src.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("pebble state backend: restore: %w", err)
	}
	defer it.Close()
	batch := b.db.NewBatch()
	defer func() { _ = batch.Close() }()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("pebble state backend: restore: read %s: %w", filepath.Base(dir), err)
		}
		if err := batch.Set(it.Key(), v, nil); err != nil {
			return err
		}
		if batch.Len() >= restoreBatch {
			if err := batch.Commit(pebble.NoSync); err != nil {
				return fmt.Errorf("pebble state backend: restore: %w", err)
			}
			batch.Reset()
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("pebble state backend: restore: read %s: %w", filepath.Base(dir), err)
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("pebble state backend: restore: %w", err)
	}
	return nil
}

// Compact rewrites the whole key range into the bottom level: after a
// bulk load or a restore that dropped other groups, the next checkpoints
// share the large bottom tables instead of re-uploading what compactions
// would rewrite.
func (b *Backend) Compact() error {
	if err := b.db.Compact(context.Background(), []byte{}, []byte{0xff, 0xff, 0xff}, true); err != nil {
		return fmt.Errorf("pebble state backend: compact: %w", err)
	}
	return nil
}

// removeCheckpoints removes the checkpoint directories a process that
// crashed left next to dir.
func removeCheckpoints(dir string) {
	old, _ := filepath.Glob(dir + ".ckpt-*")
	for _, d := range old {
		_ = os.RemoveAll(d)
	}
}
