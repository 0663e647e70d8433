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
	"github.com/cockroachdb/pebble/v2/vfs"

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

// Checkpoint makes a pebble checkpoint next to the database: hard links
// to its tables, a copy of its table list, options and write-ahead log.
// The memtable is not flushed: its entries are in the log (written, never
// synced), so the copy of the log, at most a memtable's bytes, replaces a
// flush, whose time (sorting, compressing and writing a table) grew with
// the memtable. Tables (.sst) and blob files are immutable: they are the
// stable files; the log is uploaded with every checkpoint.
func (b *Backend) Checkpoint() (statebackend.FileCheckpoint, error) {
	b.ckpts++
	dir := fmt.Sprintf("%s.ckpt-%s-%d", b.dir, b.incarnation, b.ckpts)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("pebble state backend: checkpoint: %w", err)
	}
	if err := b.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
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
		c.files = append(c.files, statebackend.CheckpointFile{Name: e.Name(), Size: fi.Size(), Stable: stable(e.Name())})
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
// other groups are deleted by two range deletions) and its tables stay the
// database's, unchanged, so they are returned as kept; the entries of the
// task's groups in the others are copied in (all are copied, and nothing is
// kept, when the first is on another file system and cannot be moved into
// place).
func (b *Backend) RestoreCheckpoints(dirs []string) ([]string, error) {
	if len(dirs) == 0 {
		return nil, errors.New("pebble state backend: restore from no checkpoint")
	}
	if err := b.Close(); err != nil {
		return nil, err
	}
	var kept []string
	if entries, err := os.ReadDir(dirs[0]); err == nil {
		for _, e := range entries {
			if stable(e.Name()) {
				kept = append(kept, e.Name())
			}
		}
	}
	lo, hi := statebackend.AppendGroupPrefix(nil, b.groups.Start), statebackend.AppendGroupPrefix(nil, b.groups.End)
	copyFrom := dirs[1:]
	if err := os.Rename(dirs[0], b.dir); err != nil {
		// Another file system: every checkpoint is copied in.
		copyFrom, kept = dirs, nil
		if err := b.open(); err != nil {
			return nil, fmt.Errorf("pebble state backend: restore: %w", err)
		}
	} else {
		if err := b.open(); err != nil {
			return nil, fmt.Errorf("pebble state backend: restore: %w", err)
		}
		if err := b.db.DeleteRange([]byte{}, lo, pebble.NoSync); err != nil {
			return nil, fmt.Errorf("pebble state backend: restore: drop other key groups: %w", err)
		}
		if err := b.db.DeleteRange(hi, []byte{0xff, 0xff, 0xff}, pebble.NoSync); err != nil {
			return nil, fmt.Errorf("pebble state backend: restore: drop other key groups: %w", err)
		}
	}
	for _, dir := range copyFrom {
		if err := b.copyGroups(dir, lo, hi); err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// stable reports whether a file of a pebble checkpoint is immutable: its
// tables (.sst) and blob files.
func stable(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// copyGroups copies the entries in [lo, hi) of the checkpoint in dir.
func (b *Backend) copyGroups(dir string, lo, hi []byte) error {
	src, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, FS: scratchFS{vfs.Default}, Logger: quiet{pebble.DefaultLogger}})
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
