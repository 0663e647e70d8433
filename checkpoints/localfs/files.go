package localfs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/egret-stream/egret/checkpoints/internal/blob"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/safepath"
)

var _ spi.CheckpointFiles = (*Storage)(nil)

// FilePath returns the path of a checkpoint file.
func (s *Storage) FilePath(topology, name string) (string, error) {
	if err := blob.CheckFile(topology, name); err != nil {
		return "", err
	}
	return safepath.Join(s.root, topology, blob.FilesDir, name)
}

func (s *Storage) filesDir(topology string) (string, error) {
	if err := blob.CheckTopology(topology); err != nil {
		return "", err
	}
	return safepath.Join(s.root, topology, blob.FilesDir)
}

func (s *Storage) fileErr(op, topology, name string, err error) error {
	return fmt.Errorf("localfs checkpoint %s of %s file %s in %s: %w", op, topology, name, s.root, err)
}

// CreateFile starts a file written into a temporary file of the files
// directory and renamed into place by Commit.
func (s *Storage) CreateFile(ctx context.Context, topology, name string) (spi.FileWriter, error) {
	if err := s.check(ctx); err != nil {
		return nil, s.fileErr("create", topology, name, err)
	}
	dst, err := s.FilePath(topology, name)
	if err != nil {
		return nil, s.fileErr("create", topology, name, err)
	}
	dir := filepath.Dir(dst)
	var f *os.File
	// DeleteFile removes the directory once it is empty: create it again
	// if that happened between the two calls.
	for try := 0; ; try++ {
		if err = os.MkdirAll(dir, 0o755); err != nil {
			return nil, s.fileErr("create", topology, name, fmt.Errorf("create directory: %w", err))
		}
		if f, err = os.CreateTemp(dir, blob.TempPrefix+name+"-*"); err == nil || !errors.Is(err, fs.ErrNotExist) || try == 2 {
			break
		}
	}
	if err != nil {
		return nil, s.fileErr("create", topology, name, fmt.Errorf("create temporary file: %w", err))
	}
	return &fileWriter{s: s, ctx: ctx, f: f, w: bufio.NewWriterSize(f, 256<<10), dst: dst, topology: topology, name: name}, nil
}

type fileWriter struct {
	s              *Storage
	ctx            context.Context
	f              *os.File
	w              *bufio.Writer
	dst            string
	topology, name string
	done           bool
	err            error
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, w.s.fileErr("write", w.topology, w.name, errors.New("the file is already committed or aborted"))
	}
	if w.err != nil {
		return 0, w.err
	}
	if err := w.ctx.Err(); err != nil {
		w.err = w.s.fileErr("write", w.topology, w.name, err)
		return 0, w.err
	}
	n, err := w.w.Write(p)
	if err != nil {
		w.err = w.s.fileErr("write", w.topology, w.name, err)
	}
	return n, w.err
}

func (w *fileWriter) Commit() error {
	if w.done {
		return w.s.fileErr("commit", w.topology, w.name, errors.New("the file is already committed or aborted"))
	}
	if err := w.commit(); err != nil {
		_ = w.Abort()
		return w.s.fileErr("commit", w.topology, w.name, err)
	}
	return nil
}

func (w *fileWriter) commit() error {
	if w.err != nil {
		return w.err
	}
	if err := w.s.check(w.ctx); err != nil {
		return err
	}
	tmp := w.f.Name()
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(tmp, w.dst); err != nil {
		return fmt.Errorf("rename into place: %w", err)
	}
	w.done = true
	dir := filepath.Dir(w.dst)
	if err := syncDir(dir); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

func (w *fileWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	_ = w.f.Close()
	if err := os.Remove(w.f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return w.s.fileErr("abort", w.topology, w.name, err)
	}
	return nil
}

// OpenFile opens a committed file.
func (s *Storage) OpenFile(ctx context.Context, topology, name string) (spi.FileReader, error) {
	if err := s.check(ctx); err != nil {
		return nil, s.fileErr("open", topology, name, err)
	}
	p, err := s.FilePath(topology, name)
	if err != nil {
		return nil, s.fileErr("open", topology, name, err)
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, s.fileErr("open", topology, name, fmt.Errorf("no such file: %w", spi.ErrNotFound))
	}
	if err != nil {
		return nil, s.fileErr("open", topology, name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, s.fileErr("open", topology, name, err)
	}
	return &fileReader{File: f, size: fi.Size()}, nil
}

type fileReader struct {
	*os.File
	size int64
}

func (r *fileReader) Size() int64 { return r.size }

// ListFiles lists the committed files of topology.
func (s *Storage) ListFiles(ctx context.Context, topology string) ([]spi.FileInfo, error) {
	if err := s.check(ctx); err != nil {
		return nil, s.fileErr("list", topology, "*", err)
	}
	dir, err := s.filesDir(topology)
	if err != nil {
		return nil, s.fileErr("list", topology, "*", err)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []spi.FileInfo{}, nil
	}
	if err != nil {
		return nil, s.fileErr("list", topology, "*", err)
	}
	out := []spi.FileInfo{}
	for _, e := range entries {
		if blob.IsTemp(e.Name()) || !e.Type().IsRegular() || spi.CheckFileName(e.Name()) != nil {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, s.fileErr("list", topology, "*", err)
		}
		out = append(out, spi.FileInfo{Name: e.Name(), Size: fi.Size()})
	}
	slices.SortFunc(out, func(a, b spi.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteFile removes a file.
func (s *Storage) DeleteFile(ctx context.Context, topology, name string) error {
	if err := s.check(ctx); err != nil {
		return s.fileErr("delete", topology, name, err)
	}
	p, err := s.FilePath(topology, name)
	if err != nil {
		return s.fileErr("delete", topology, name, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s.fileErr("delete", topology, name, err)
	}
	// The last file gone, the directory goes too (it fails while any file,
	// or a file being written, is there), so that a killed topology
	// leaves nothing.
	_ = os.Remove(filepath.Dir(p))
	return nil
}
