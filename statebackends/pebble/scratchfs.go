package pebble

import (
	"errors"
	"io/fs"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// scratchFS is the local file system without fsyncs. The backend's
// directory is scratch: a restarted task restores its state from the
// checkpoint storage and clears the directory, so nothing in it needs to
// survive a crash, and an fsync (of the log, of a checkpoint's directory)
// would only lengthen a checkpoint's synchronous part on a busy disk.
// SyncTo, which pebble calls every BytesPerSync bytes written to start the
// writeback of what it wrote without waiting for it, is kept: it bounds
// the dirty pages a task holds (they count in its memory cgroup). Logs are
// neither preallocated nor recycled, so a log file holds what was written
// to it and no more.
type scratchFS struct{ vfs.FS }

func (s scratchFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return noSync(s.FS.Create(name, c))
}

func (s scratchFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return noSync(s.FS.Open(name, opts...))
}

func (s scratchFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return noSync(s.FS.OpenReadWrite(name, c, opts...))
}

func (s scratchFS) OpenDir(name string) (vfs.File, error) { return noSync(s.FS.OpenDir(name)) }

// ReuseForWrite creates newname afresh: a recycled log would keep the old
// log's bytes past what is written to it, and a checkpoint copies (and
// uploads) the whole file.
func (s scratchFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err := s.FS.Remove(oldname); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return s.Create(newname, c)
}

func noSync(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return unsynced{f}, nil
}

// unsynced is a file whose syncs do nothing.
type unsynced struct{ vfs.File }

func (unsynced) Sync() error                { return nil }
func (unsynced) SyncData() error            { return nil }
func (unsynced) SyncTo(int64) (bool, error) { return true, nil }
