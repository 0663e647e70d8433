package hdfs

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	hdfsclient "github.com/colinmarc/hdfs/v2"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/checkpoints/internal/blob"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/hdfsx"
)

var _ spi.CheckpointFiles = (*Storage)(nil)

// FilePath returns the HDFS path of a checkpoint file.
func (st *Storage) FilePath(topology, name string) (string, error) {
	if err := blob.CheckFile(topology, name); err != nil {
		return "", err
	}
	return path.Join(st.s.Directory, topology, blob.FilesDir, name), nil
}

func (st *Storage) fileErr(op, topology, name string, err error) error {
	return fmt.Errorf("hdfs checkpoint %s of %s file %s in %s: %w", op, topology, name, st.where(), err)
}

// CreateFile starts a file written into a temporary file of the files
// directory and renamed into place by Commit, once its last block is
// replicated.
func (st *Storage) CreateFile(ctx context.Context, topology, name string) (spi.FileWriter, error) {
	dst, err := st.FilePath(topology, name)
	if err != nil {
		return nil, st.fileErr("create", topology, name, err)
	}
	c, err := st.conn(ctx)
	if err != nil {
		return nil, st.fileErr("create", topology, name, err)
	}
	dir := path.Dir(dst)
	if err := c.MkdirAll(dir, 0o755); err != nil {
		return nil, st.fileErr("create", topology, name, st.done(c, st.explain(err, "create directory "+dir)))
	}
	defaults, err := c.ServerDefaults()
	if err != nil {
		return nil, st.fileErr("create", topology, name, st.done(c, fmt.Errorf("read the NameNode's defaults: %w", err)))
	}
	replication := st.s.Replication
	if replication == 0 {
		replication = defaults.Replication
	}
	tmp := path.Join(dir, blob.TempPrefix+name+"-"+randomHex())
	w, err := c.CreateFile(tmp, replication, defaults.BlockSize, 0o644)
	if err != nil {
		return nil, st.fileErr("create", topology, name, st.done(c, st.explain(err, "write in "+dir)))
	}
	return &fileWriter{st: st, c: c, ctx: ctx, w: w, tmp: tmp, dst: dst, topology: topology, name: name}, nil
}

type fileWriter struct {
	st             *Storage
	c              *hdfsclient.Client
	ctx            context.Context
	w              *hdfsclient.FileWriter
	tmp, dst       string
	topology, name string
	done           bool
	err            error
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, w.st.fileErr("write", w.topology, w.name, errors.New("the file is already committed or aborted"))
	}
	if w.err != nil {
		return 0, w.err
	}
	if err := w.ctx.Err(); err != nil {
		w.err = w.st.fileErr("write", w.topology, w.name, err)
		return 0, w.err
	}
	if len(p) == 0 {
		return 0, nil // an empty write would start a block that never fills
	}
	n, err := w.w.Write(p)
	if err != nil {
		w.err = w.st.fileErr("write", w.topology, w.name, w.st.done(w.c, err))
	}
	return n, w.err
}

func (w *fileWriter) Commit() error {
	if w.done {
		return w.st.fileErr("commit", w.topology, w.name, errors.New("the file is already committed or aborted"))
	}
	if err := w.commit(); err != nil {
		_ = w.Abort()
		return w.st.fileErr("commit", w.topology, w.name, err)
	}
	return nil
}

func (w *fileWriter) commit() error {
	if w.err != nil {
		return w.err
	}
	st := w.st
	st.mu.Lock()
	closed := st.closed
	st.mu.Unlock()
	if closed {
		return spi.ErrClosed
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if err := hdfsx.CloseReplicated(w.ctx, w.w, st.s.Timeout); err != nil {
		return st.done(w.c, fmt.Errorf("close %s: %w", w.tmp, err))
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if err := w.c.Rename(w.tmp, w.dst); err != nil {
		return st.done(w.c, st.explain(err, "rename in "+path.Dir(w.dst)))
	}
	w.done = true
	return nil
}

func (w *fileWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	_ = w.w.Close()
	if err := w.c.Remove(w.tmp); err != nil && !hdfsx.IsNotExist(err) {
		w.st.log.Warn("could not remove the temporary file", zap.String("path", w.tmp), zap.Error(err))
	}
	return nil
}

// OpenFile opens a committed file.
func (st *Storage) OpenFile(ctx context.Context, topology, name string) (spi.FileReader, error) {
	p, err := st.FilePath(topology, name)
	if err != nil {
		return nil, st.fileErr("open", topology, name, err)
	}
	c, err := st.conn(ctx)
	if err != nil {
		return nil, st.fileErr("open", topology, name, err)
	}
	r, err := c.Open(p)
	if hdfsx.IsNotExist(err) {
		return nil, st.fileErr("open", topology, name, fmt.Errorf("no such file: %w", spi.ErrNotFound))
	}
	if err != nil {
		return nil, st.fileErr("open", topology, name, st.done(c, st.explain(err, "read "+p)))
	}
	return fileReader{r}, nil
}

type fileReader struct{ *hdfsclient.FileReader }

func (r fileReader) Size() int64 { return r.Stat().Size() }

// ListFiles lists the committed files of topology.
func (st *Storage) ListFiles(ctx context.Context, topology string) ([]spi.FileInfo, error) {
	if err := blob.CheckTopology(topology); err != nil {
		return nil, st.fileErr("list", topology, "*", err)
	}
	c, err := st.conn(ctx)
	if err != nil {
		return nil, st.fileErr("list", topology, "*", err)
	}
	dir := path.Join(st.s.Directory, topology, blob.FilesDir)
	entries, err := c.ReadDir(dir)
	if hdfsx.IsNotExist(err) {
		return []spi.FileInfo{}, nil
	}
	if err != nil {
		return nil, st.fileErr("list", topology, "*", st.done(c, st.explain(err, "list "+dir)))
	}
	out := []spi.FileInfo{}
	for _, e := range entries {
		if blob.IsTemp(e.Name()) || !e.Mode().IsRegular() || spi.CheckFileName(e.Name()) != nil {
			continue
		}
		out = append(out, spi.FileInfo{Name: e.Name(), Size: e.Size()})
	}
	slices.SortFunc(out, func(a, b spi.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteFile removes a file.
func (st *Storage) DeleteFile(ctx context.Context, topology, name string) error {
	p, err := st.FilePath(topology, name)
	if err != nil {
		return st.fileErr("delete", topology, name, err)
	}
	c, err := st.conn(ctx)
	if err != nil {
		return st.fileErr("delete", topology, name, err)
	}
	if err := c.Remove(p); err != nil && !hdfsx.IsNotExist(err) {
		return st.fileErr("delete", topology, name, st.done(c, st.explain(err, "delete "+p)))
	}
	return nil
}
