package ckptmgr

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cespare/xxhash/v2"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/ckptio"
	"github.com/egret-stream/egret/daemons/wire"
)

// fileConn is the state of daemons/ckptio's protocol on one connection: the
// file being uploaded, written into the storage as its chunks arrive.
type fileConn struct {
	s    *Server
	w    *bufio.Writer
	out  []byte
	msg  ckptio.Msg
	chnk []byte

	up   spi.FileWriter // nil when no upload is open, or it failed
	name string
	open bool // an upload is open (its chunks are expected)
	d    *xxhash.Digest
	n    int64
	err  error // the upload's first failure, reported at its commit
}

func (s *Server) newFileConn(w *bufio.Writer) *fileConn {
	return &fileConn{s: s, w: w, d: xxhash.New()}
}

// close aborts an upload the connection left open (the client died or
// gave up).
func (fc *fileConn) close() {
	if fc.up != nil {
		_ = fc.up.Abort()
		fc.up = nil
	}
	fc.open = false
}

func (fc *fileConn) files() (spi.CheckpointFiles, error) {
	return spi.FilesOf(fc.s.cfg.Storage)
}

// handle serves one frame of the protocol; an error closes the connection.
func (fc *fileConn) handle(ctx context.Context, t wire.FrameType, payload []byte) error {
	if err := ckptio.DecodeMsg(t, payload, &fc.msg); err != nil {
		return err
	}
	m := &fc.msg
	switch t {
	case wire.FrameFileCreate:
		if fc.open {
			return fmt.Errorf("a second upload (%s) started before %s was committed", m.Name, fc.name)
		}
		fc.open, fc.name, fc.n, fc.err = true, m.Name, 0, nil
		fc.d.Reset()
		files, err := fc.files()
		if err == nil {
			err = call(func() (err error) {
				fc.up, err = files.CreateFile(ctx, fc.s.cfg.TopologyName, m.Name)
				return err
			})
		}
		fc.fail(err)
		return nil
	case wire.FrameFileChunk:
		if !fc.open {
			return errors.New("a file chunk outside an upload")
		}
		fc.n += int64(len(m.Data))
		_, _ = fc.d.Write(m.Data)
		if fc.up != nil {
			fc.fail(call(func() error { _, err := fc.up.Write(m.Data); return err }))
		}
		return nil
	case wire.FrameFileCommit:
		if !fc.open {
			return errors.New("a commit outside an upload")
		}
		return fc.commit(m.Size, m.Sum)
	case wire.FrameFileOpen:
		return fc.read(ctx, "file "+m.Name, func() (spi.FileReader, error) {
			files, err := fc.files()
			if err != nil {
				return nil, err
			}
			var r spi.FileReader
			err = call(func() (err error) {
				r, err = files.OpenFile(ctx, fc.s.cfg.TopologyName, m.Name)
				return err
			})
			return r, err
		})
	case wire.FrameFileManifest:
		key := fc.s.key(m.Checkpoint, m.Task)
		return fc.read(ctx, fmt.Sprintf("manifest of checkpoint %d task %d", key.Checkpoint, key.Task), func() (spi.FileReader, error) {
			var b []byte
			err := call(func() (err error) {
				b, err = fc.s.cfg.Storage.Load(ctx, key)
				return err
			})
			if err != nil {
				return nil, err
			}
			return bytesReader{bytes.NewReader(b)}, nil
		})
	case wire.FrameFileStat:
		return fc.stat(ctx, m.Names)
	}
	return fmt.Errorf("unexpected %s frame from a client", t)
}

// fail records the first failure of the open upload and drops its writer.
func (fc *fileConn) fail(err error) {
	if err == nil {
		return
	}
	fc.s.storageLost(err)
	if fc.err == nil {
		fc.err = err
	}
	if fc.up != nil {
		_ = fc.up.Abort()
		fc.up = nil
	}
}

func (fc *fileConn) commit(size int64, sum uint64) error {
	fc.open = false
	if fc.err == nil && (size != fc.n || sum != fc.d.Sum64()) {
		fc.fail(fmt.Errorf("%w: received %d bytes hashing to %016x, the client sent %d hashing to %016x", ckptio.ErrCorrupt, fc.n, fc.d.Sum64(), size, sum))
	}
	if fc.err == nil {
		fc.fail(call(fc.up.Commit))
		fc.up = nil
	}
	res := &ckptio.Msg{Type: wire.FrameFileResult}
	if fc.err != nil {
		fc.s.stats.FileErrors.Add(1)
		res.Status, res.Error = ckptio.StatusFailed, fc.err.Error()
		fc.s.log.Error("file upload failed", zap.String("file", fc.name), zap.Error(fc.err))
	} else {
		fc.s.stats.FilesWritten.Add(1)
		fc.s.stats.FileBytesWritten.Add(fc.n)
		res.Values = append(res.Values, fc.n)
	}
	return fc.send(res, true)
}

func (fc *fileConn) send(m *ckptio.Msg, flush bool) error {
	fc.out = ckptio.AppendMsg(fc.out[:0], m)
	if _, err := fc.w.Write(fc.out); err != nil {
		return err
	}
	if flush {
		return fc.w.Flush()
	}
	return nil
}

func resultOf(err error) *ckptio.Msg {
	m := &ckptio.Msg{Type: wire.FrameFileResult, Status: ckptio.StatusFailed, Error: err.Error()}
	if errors.Is(err, spi.ErrNotFound) {
		m.Status = ckptio.StatusNotFound
	}
	return m
}

// read streams what open returns: a Result with its size, its chunks, a
// Result that ends it (a failure when the storage failed midway).
func (fc *fileConn) read(ctx context.Context, what string, open func() (spi.FileReader, error)) error {
	r, err := open()
	if err != nil {
		fc.s.storageLost(err)
		if !errors.Is(err, spi.ErrNotFound) {
			fc.s.stats.FileErrors.Add(1)
			fc.s.log.Error("read failed", zap.String("what", what), zap.Error(err))
		}
		return fc.send(resultOf(err), true)
	}
	defer r.Close()
	size := r.Size()
	if err := fc.send(&ckptio.Msg{Type: wire.FrameFileResult, Values: []int64{size}}, false); err != nil {
		return err
	}
	if fc.chnk == nil {
		// Chunks stay within the frame limit, which the container's
		// processes share (egret.wire.max.frame.bytes).
		fc.chnk = make([]byte, min(ckptio.ChunkSize, fc.s.cfg.MaxFrame-64))
	}
	var sent int64
	for sent < size {
		n, err := io.ReadFull(r, fc.chnk[:min(int64(len(fc.chnk)), size-sent)])
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			err = fmt.Errorf("read %s at byte %d of %d: %w", what, sent, size, err)
			fc.s.storageLost(err)
			fc.s.stats.FileErrors.Add(1)
			fc.s.log.Error("read failed", zap.Error(err))
			return fc.send(resultOf(err), true)
		}
		if err := fc.send(&ckptio.Msg{Type: wire.FrameFileChunk, Data: fc.chnk[:n]}, false); err != nil {
			return err
		}
		sent += int64(n)
	}
	fc.s.stats.FilesRead.Add(1)
	fc.s.stats.FileBytesRead.Add(size)
	return fc.send(&ckptio.Msg{Type: wire.FrameFileResult}, true)
}

func (fc *fileConn) stat(ctx context.Context, names []string) error {
	files, err := fc.files()
	if err != nil {
		return fc.send(resultOf(err), true)
	}
	sizes := make([]int64, 0, len(names))
	for _, name := range names {
		var r spi.FileReader
		err := call(func() (err error) {
			r, err = files.OpenFile(ctx, fc.s.cfg.TopologyName, name)
			return err
		})
		switch {
		case errors.Is(err, spi.ErrNotFound):
			sizes = append(sizes, -1)
		case err != nil:
			fc.s.storageLost(err)
			return fc.send(resultOf(fmt.Errorf("stat %s: %w", name, err)), true)
		default:
			sizes = append(sizes, r.Size())
			r.Close()
		}
	}
	return fc.send(&ckptio.Msg{Type: wire.FrameFileResult, Values: sizes}, true)
}

// bytesReader serves a manifest as a file.
type bytesReader struct{ *bytes.Reader }

func (bytesReader) Close() error { return nil }

// cleanFiles deletes the checkpoint files no retained checkpoint needs: a
// file is deleted when the checkpoint that uploaded it (its name's origin)
// is below keepFrom, or above deleteAfter when that is set, and no manifest
// of a retained checkpoint names it. A checkpoint in progress has an id
// above every complete one, so neither the files it uploads nor those it
// shares with its task's earlier checkpoints (the last of which is retained,
// complete, and names them) are deleted. A storage without files has
// nothing to clean.
func (s *Server) cleanFiles(ctx context.Context, keepFrom, deleteAfter int64, retained []int64) (int, error) {
	files, ok := s.cfg.Storage.(spi.CheckpointFiles)
	if !ok {
		return 0, nil
	}
	var list []spi.FileInfo
	if err := call(func() (err error) { list, err = files.ListFiles(ctx, s.cfg.TopologyName); return err }); err != nil {
		return 0, fmt.Errorf("list the checkpoint files: %w", err)
	}
	expired := func(origin int64) bool { return origin < keepFrom || deleteAfter > 0 && origin > deleteAfter }
	var doomed []string
	tasks := map[int32]bool{}
	for _, f := range list {
		origin, task, ok := ckptio.ParseFileName(f.Name)
		if !ok {
			continue // not a file of ckptio's naming: not ours to delete
		}
		tasks[task] = true
		if expired(origin) {
			doomed = append(doomed, f.Name)
		}
	}
	if len(doomed) == 0 {
		return 0, nil
	}
	// Every file a manifest names carries the manifest's task (a task
	// shares only its own earlier files), so the manifests of the tasks
	// seen are all that can name a file.
	used := map[string]bool{}
	for _, id := range retained {
		if expired(id) {
			continue
		}
		for task := range tasks {
			var b []byte
			err := call(func() (err error) { b, err = s.cfg.Storage.Load(ctx, s.key(id, task)); return err })
			if errors.Is(err, spi.ErrNotFound) {
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("read the manifest of checkpoint %d task %d (no file deleted): %w", id, task, err)
			}
			m, err := ckptio.UnmarshalManifest(b)
			if err != nil {
				return 0, fmt.Errorf("checkpoint %d task %d (no file deleted): %w", id, task, err)
			}
			for _, f := range m.Files {
				used[f.Name] = true
			}
		}
	}
	deleted := 0
	var errs []error
	for _, name := range doomed {
		if used[name] {
			continue
		}
		if err := call(func() error { return files.DeleteFile(ctx, s.cfg.TopologyName, name) }); err != nil {
			s.storageLost(err)
			errs = append(errs, err)
			continue
		}
		deleted++
	}
	s.stats.FilesDeleted.Add(int64(deleted))
	return deleted, errors.Join(errs...)
}
