package ckptio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sync/errgroup"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"
)

// TaskSnapshot is what a task forks synchronously at a barrier: its
// operator state encoded, and its keyed state as a full snapshot stream or
// as an incremental checkpoint. Upload writes it to the checkpoint storage
// off the task's goroutine and releases it.
type TaskSnapshot struct {
	Checkpoint int64
	Task       int32
	// MaxParallelism and Groups are the task's key groups.
	MaxParallelism int
	Groups         keygroup.Range
	// Backend names the task's state backend (topology.state.backend).
	Backend string
	// Operator is the encoded operator (non-keyed) state; nil for none.
	Operator []byte
	// Keyed is a full snapshot of the keyed state (any backend); Files an
	// incremental one (a statebackend.Incremental backend) of the
	// incarnation Incarnation. At most one of them is set.
	Keyed       statebackend.Snapshot
	Files       statebackend.FileCheckpoint
	Incarnation string
}

// Release frees what the snapshot holds.
func (s *TaskSnapshot) Release() {
	if s.Keyed != nil {
		s.Keyed.Release()
	}
	if s.Files != nil {
		s.Files.Release()
	}
}

// Stats describe one upload.
type Stats struct {
	// Full is the size of the checkpoint (every file it consists of),
	// Uploaded the bytes uploaded for it (the rest it shares with earlier
	// checkpoints of the task).
	Full, Uploaded int64
	Files, Reused  int
	Duration       time.Duration
}

// Uploader writes a task's checkpoints to the checkpoint storage and reads
// them back. Its uploads run one at a time (Upload is called from one
// goroutine, after the previous upload returned); it remembers the files of
// its last successful upload, which the next one reuses rather than
// uploading them again.
type Uploader struct {
	c        *Client
	task     int32
	parallel int

	mu          sync.Mutex
	incarnation string
	shared      map[string]File // part → stored file, of the last upload

	// local, when set, keeps local copies (hard links) of the files of
	// incremental checkpoints under their storage names; keep names those
	// of the last upload and the last restore.
	local string
	keep  map[string]bool
	// fromDisk and downloaded count the files of the last restore.
	fromDisk, downloaded atomic.Int64
}

// LastRestore returns how many files of incremental checkpoints the last
// restore took from the local copies and how many it downloaded.
func (u *Uploader) LastRestore() (local, downloaded int64) {
	return u.fromDisk.Load(), u.downloaded.Load()
}

// KeepLocalCopies makes the uploader keep, in dir (on the file system of
// the backend's directory), hard links to the files of the incremental
// checkpoints it uploads or downloads, under their storage names: a restore
// takes a file from there when its size and XXH64 are the manifest's, so a
// task restarted in the same container, or restored again, reads its state
// from the local disk instead of the checkpoint storage (Flink's local
// recovery). Only the files of the last upload and of the last restore are
// kept.
func (u *Uploader) KeepLocalCopies(dir string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("ckptio: local copies: %w", err)
	}
	u.local = dir
	return nil
}

// keepLocal links path into the local copies as name.
func (u *Uploader) keepLocal(path, name string) {
	if u.local == "" {
		return
	}
	dst := filepath.Join(u.local, name)
	if _, err := os.Stat(dst); err == nil {
		return
	}
	_ = os.Link(path, dst)
}

// pruneLocal removes the local copies no longer named by the files of
// the last upload or restore (files), keeping those of the previous one.
func (u *Uploader) pruneLocal(files []File) {
	if u.local == "" {
		return
	}
	keep := make(map[string]bool, len(files))
	for _, f := range files {
		keep[f.Name] = true
	}
	entries, _ := os.ReadDir(u.local)
	for _, e := range entries {
		if !keep[e.Name()] && !u.keep[e.Name()] {
			_ = os.Remove(filepath.Join(u.local, e.Name()))
		}
	}
	u.keep = keep
}

// fromLocal links the local copy of f to path when it holds f's bytes.
func (u *Uploader) fromLocal(f File, path string) bool {
	if u.local == "" {
		return false
	}
	src := filepath.Join(u.local, f.Name)
	fh, err := os.Open(src)
	if err != nil {
		return false
	}
	d := xxhash.New()
	n, err := io.Copy(d, fh)
	fh.Close()
	if err != nil || n != f.Size || d.Sum64() != f.Sum {
		_ = os.Remove(src) // damaged: downloaded again
		return false
	}
	return os.Link(src, path) == nil
}

// Parallel is how many files an uploader moves at once.
const Parallel = 4

// NewUploader returns an uploader of task's checkpoints.
func NewUploader(c *Client, task int32) *Uploader {
	return &Uploader{c: c, task: task, parallel: Parallel}
}

// Upload uploads snap's files, then returns its manifest (not stored: the
// task sends it in StoreInstanceState, which stores it last). It releases
// snap.
func (u *Uploader) Upload(ctx context.Context, snap TaskSnapshot) (*Manifest, Stats, error) {
	defer snap.Release()
	u.mu.Lock()
	defer u.mu.Unlock()
	start := time.Now()
	if snap.Keyed != nil && snap.Files != nil {
		return nil, Stats{}, errors.New("ckptio: a task snapshot holds a full and an incremental keyed snapshot")
	}
	m := &Manifest{Checkpoint: snap.Checkpoint, Task: snap.Task, MaxParallelism: snap.MaxParallelism, Groups: snap.Groups, Backend: snap.Backend}
	var st Stats
	if snap.Operator != nil {
		name := FileName(snap.Checkpoint, snap.Task, PartOperator)
		s, err := u.c.Put(ctx, name, bytes.NewReader(snap.Operator))
		if err != nil {
			return nil, st, err
		}
		m.Files = append(m.Files, File{Name: name, Part: PartOperator, Size: s.Size, Sum: s.Sum})
	}
	if snap.Keyed != nil {
		name := FileName(snap.Checkpoint, snap.Task, PartKeyedStream)
		up, err := u.c.Create(ctx, name)
		if err != nil {
			return nil, st, err
		}
		if _, err := snap.Keyed.WriteTo(up); err != nil {
			up.Abort()
			return nil, st, fmt.Errorf("ckptio: write the keyed snapshot of checkpoint %d: %w", snap.Checkpoint, err)
		}
		s, err := up.Commit()
		if err != nil {
			return nil, st, err
		}
		m.Files = append(m.Files, File{Name: name, Part: PartKeyedStream, Size: s.Size, Sum: s.Sum, Groups: snap.Groups})
	}
	shared := map[string]File{}
	if snap.Files != nil {
		files, reused, err := u.uploadFiles(ctx, snap)
		if err != nil {
			return nil, st, err
		}
		m.Files = append(m.Files, files...)
		st.Reused = reused
		for _, f := range files {
			shared[f.Part] = f
		}
	}
	if _, err := m.MarshalBinary(); err != nil {
		return nil, st, fmt.Errorf("ckptio: manifest of checkpoint %d: %w", snap.Checkpoint, err)
	}
	u.incarnation, u.shared = snap.Incarnation, shared
	u.pruneLocal(m.Files)
	st.Full, st.Uploaded, st.Files, st.Duration = m.Size(), m.Uploaded(), len(m.Files), time.Since(start)
	return m, st, nil
}

// uploadFiles uploads the files of an incremental checkpoint that the last
// upload did not, Parallel at a time.
func (u *Uploader) uploadFiles(ctx context.Context, snap TaskSnapshot) ([]File, int, error) {
	dir := snap.Files.Dir()
	list := snap.Files.Files()
	out := make([]File, len(list))
	reused := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(u.parallel)
	for i, f := range list {
		part := PartFilesPrefix + f.Name
		if old, ok := u.shared[part]; ok && f.Stable && snap.Incarnation == u.incarnation && old.Size == f.Size {
			out[i] = old
			reused++
			continue
		}
		rest := f.Name
		if f.Stable {
			// The name stays the file's while later checkpoints share it.
			rest = snap.Incarnation + "-" + f.Name
		}
		name := FileName(snap.Checkpoint, snap.Task, rest)
		g.Go(func() error {
			fh, err := os.Open(filepath.Join(dir, f.Name))
			if err != nil {
				return fmt.Errorf("ckptio: checkpoint %d: %w", snap.Checkpoint, err)
			}
			defer fh.Close()
			s, err := u.c.Put(gctx, name, fh)
			if err != nil {
				return err
			}
			if s.Size != f.Size {
				return fmt.Errorf("ckptio: checkpoint %d: %s changed while it was uploaded (%d bytes, listed with %d)", snap.Checkpoint, f.Name, s.Size, f.Size)
			}
			u.keepLocal(fh.Name(), name)
			out[i] = File{Name: name, Part: part, Size: s.Size, Sum: s.Sum, Groups: snap.Groups}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, 0, err
	}
	return out, reused, nil
}

// RestoreTarget is where a restore puts a task's state.
type RestoreTarget struct {
	// Backend receives the keyed state (nil: the manifests' keyed parts
	// are not read).
	Backend statebackend.Backend
	// Groups are the task's key groups: keyed files of other groups are
	// not downloaded.
	Groups keygroup.Range
	// Dir is a local directory for the files of incremental checkpoints
	// (removed afterwards).
	Dir string
}

// Restore reads the checkpoints of manifests (one, or those of every task
// that owned a group of the task before a rescale) into t, downloading
// Parallel files at once, and returns the operator states they hold, in the
// order of manifests (nil for one without).
func (u *Uploader) Restore(ctx context.Context, manifests []*Manifest, t RestoreTarget) ([][]byte, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.incarnation, u.shared = "", nil // the backend restored starts a new life
	u.fromDisk.Store(0)
	u.downloaded.Store(0)
	ops := make([][]byte, len(manifests))
	var dirs []string
	var first *Manifest // the manifest of dirs[0]
	var streams []File
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(u.parallel)
	for i, m := range manifests {
		dir := ""
		for _, f := range m.Files {
			switch {
			case f.Part == PartOperator:
				g.Go(func() error {
					var b bytes.Buffer
					if err := u.c.Get(gctx, f.Name, &b, Sum{f.Size, f.Sum}); err != nil {
						return err
					}
					ops[i] = b.Bytes()
					return nil
				})
			case t.Backend == nil || !overlap(f.Groups, t.Groups):
			case f.Part == PartKeyedStream:
				streams = append(streams, f)
			default:
				if dir == "" {
					dir = filepath.Join(t.Dir, fmt.Sprintf("restore-%d-%d", m.Checkpoint, m.Task))
					if err := os.RemoveAll(dir); err != nil {
						return nil, fmt.Errorf("ckptio: restore: %w", err)
					}
					if err := os.MkdirAll(dir, 0o755); err != nil {
						return nil, fmt.Errorf("ckptio: restore: %w", err)
					}
					dirs = append(dirs, dir)
					if first == nil {
						first = m
					}
				}
				path := filepath.Join(dir, f.Part[len(PartFilesPrefix):])
				g.Go(func() error {
					if u.fromLocal(f, path) {
						u.fromDisk.Add(1)
						return nil
					}
					if err := u.download(gctx, f, path); err != nil {
						return err
					}
					u.downloaded.Add(1)
					u.keepLocal(path, f.Name)
					return nil
				})
			}
		}
	}
	defer func() {
		for _, d := range dirs {
			_ = os.RemoveAll(d)
		}
	}()
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var restored []File
	for _, m := range manifests {
		restored = append(restored, m.Files...)
	}
	u.pruneLocal(restored)
	if len(dirs) > 0 {
		inc, ok := t.Backend.(statebackend.Incremental)
		if !ok {
			return nil, fmt.Errorf("ckptio: restore: the checkpoint holds the files of an incremental backend (%s); the task's backend %T cannot read them", manifests[0].Backend, t.Backend)
		}
		kept, err := inc.RestoreCheckpoints(dirs)
		if err != nil {
			return nil, fmt.Errorf("ckptio: restore: %w", err)
		}
		u.adopt(first, kept, inc.Incarnation())
	}
	for _, f := range streams {
		if err := u.restoreStream(ctx, f, t.Backend); err != nil {
			return nil, err
		}
	}
	return ops, nil
}

// adopt makes the files of m that the restored backend kept (the names of
// kept in its checkpoint directory) the last upload's, of incarnation: the
// first checkpoint after a restore uploads only the files that changed
// since the checkpoint restored, not the whole state again.
func (u *Uploader) adopt(m *Manifest, kept []string, incarnation string) {
	if len(kept) == 0 {
		return
	}
	byPart := make(map[string]File, len(m.Files))
	for _, f := range m.Files {
		byPart[f.Part] = f
	}
	shared := map[string]File{}
	for _, name := range kept {
		if f, ok := byPart[PartFilesPrefix+name]; ok {
			shared[f.Part] = f
		}
	}
	u.incarnation, u.shared = incarnation, shared
}

func overlap(a, b keygroup.Range) bool { return a.Start < b.End && b.Start < a.End }

func (u *Uploader) download(ctx context.Context, f File, path string) error {
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("ckptio: restore: %w", err)
	}
	err = u.c.Get(ctx, f.Name, fh, Sum{f.Size, f.Sum})
	if cerr := fh.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("ckptio: restore: %w", cerr)
	}
	return err
}

func (u *Uploader) restoreStream(ctx context.Context, f File, b statebackend.Backend) error {
	d, err := u.c.Open(ctx, f.Name)
	if err != nil {
		return err
	}
	defer d.Close()
	if d.Size() != f.Size {
		return fmt.Errorf("ckptio: file %s: %w: %d bytes stored, the manifest says %d", f.Name, ErrCorrupt, d.Size(), f.Size)
	}
	if err := b.Restore(d); err != nil {
		return fmt.Errorf("ckptio: restore %s: %w", f.Name, err)
	}
	if _, err := io.Copy(io.Discard, d); err != nil { // bytes after the stream's end are damage
		return fmt.Errorf("ckptio: restore %s: %w", f.Name, err)
	}
	if got := d.Sum(); got != (Sum{f.Size, f.Sum}) {
		return fmt.Errorf("ckptio: file %s: %w: %d bytes hashing to %016x, the manifest says %d hashing to %016x", f.Name, ErrCorrupt, got.Size, got.Sum, f.Size, f.Sum)
	}
	return nil
}
