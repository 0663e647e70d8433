package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/pluginpb"
)

// The files of a checkpoint storage plugin (spi.CheckpointFiles): a file
// crosses the boundary in chunks of stateChunk bytes, never whole.

func (s *checkpointStorageServer) files() (spi.CheckpointFiles, error) {
	st, err := s.b.get()
	if err != nil {
		return nil, err
	}
	f, err := spi.FilesOf(st)
	if err != nil {
		return nil, toStatus(err)
	}
	return f, nil
}

func (s *checkpointStorageServer) WriteFile(stream pluginpb.CheckpointStorage_WriteFileServer) error {
	files, err := s.files()
	if err != nil {
		return err
	}
	first, err := stream.Recv()
	if err != nil {
		return toStatus(fmt.Errorf("checkpoint storage plugin: receive a file: %w", err))
	}
	ref := first.GetFile()
	if ref == nil {
		return errorf("checkpoint storage plugin: the first request of a file names no file")
	}
	w, err := files.CreateFile(stream.Context(), ref.GetTopology(), ref.GetName())
	if err != nil {
		return toStatus(err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = w.Abort()
		}
	}()
	if err := stream.Send(&pluginpb.WriteFileReply{}); err != nil {
		return err
	}
	for m := first; ; {
		if m != first && m.GetFile() != nil {
			return errorf("checkpoint storage plugin: a later request of file %s names a file", ref.GetName())
		}
		if len(m.GetChunk()) > 0 {
			if _, err := w.Write(m.GetChunk()); err != nil {
				return toStatus(err)
			}
		}
		if m.GetCommit() {
			if err := w.Commit(); err != nil {
				return toStatus(err)
			}
			committed = true
			return stream.Send(&pluginpb.WriteFileReply{})
		}
		if m, err = stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return errorf("checkpoint storage plugin: file %s ended without a commit (aborted)", ref.GetName())
			}
			return toStatus(err)
		}
	}
}

func (s *checkpointStorageServer) ReadFile(req *pluginpb.FileRef, stream pluginpb.CheckpointStorage_ReadFileServer) error {
	files, err := s.files()
	if err != nil {
		return err
	}
	r, err := files.OpenFile(stream.Context(), req.GetTopology(), req.GetName())
	if err != nil {
		return toStatus(err)
	}
	defer r.Close()
	size := r.Size()
	buf := make([]byte, stateChunk)
	m := &pluginpb.ReadFileChunk{Size: size}
	for sent := int64(0); ; {
		n, err := io.ReadFull(r, buf[:min(int64(len(buf)), size-sent)])
		if err != nil && n == 0 && sent < size {
			return toStatus(fmt.Errorf("checkpoint storage plugin: read %s at byte %d of %d: %w", req.GetName(), sent, size, err))
		}
		m.Chunk = buf[:n]
		if err := stream.Send(m); err != nil {
			return err
		}
		sent += int64(n)
		if sent >= size {
			return nil
		}
		m = &pluginpb.ReadFileChunk{}
	}
}

func (s *checkpointStorageServer) ListFiles(ctx context.Context, req *pluginpb.ListFilesRequest) (*pluginpb.ListFilesReply, error) {
	files, err := s.files()
	if err != nil {
		return nil, err
	}
	list, err := files.ListFiles(ctx, req.GetTopology())
	if err != nil {
		return nil, toStatus(err)
	}
	out := &pluginpb.ListFilesReply{Files: make([]*pluginpb.FileInfo, len(list))}
	for i, f := range list {
		out.Files[i] = &pluginpb.FileInfo{Name: f.Name, Size: f.Size}
	}
	return out, nil
}

func (s *checkpointStorageServer) DeleteFile(ctx context.Context, req *pluginpb.FileRef) (*pluginpb.Empty, error) {
	files, err := s.files()
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(files.DeleteFile(ctx, req.GetTopology(), req.GetName()))
}

var _ spi.CheckpointFiles = (*checkpointStorageClient)(nil)

// CreateFile opens a WriteFile stream; the plugin answers once the file
// is created.
func (c *checkpointStorageClient) CreateFile(ctx context.Context, topology, name string) (spi.FileWriter, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.label(), err)
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := c.rpc.WriteFile(sctx)
	if err == nil {
		err = stream.Send(&pluginpb.WriteFileRequest{File: &pluginpb.FileRef{Topology: topology, Name: name}})
	}
	if err == nil || errors.Is(err, io.EOF) {
		_, err = stream.Recv()
	}
	if err != nil {
		cancel()
		return nil, c.rpcErr(ctx, err)
	}
	return &pluginFileWriter{c: c, ctx: ctx, cancel: cancel, stream: stream, buf: make([]byte, 0, stateChunk)}, nil
}

type pluginFileWriter struct {
	c      *checkpointStorageClient
	ctx    context.Context
	cancel context.CancelFunc
	stream pluginpb.CheckpointStorage_WriteFileClient
	buf    []byte
	done   bool
	err    error
}

func (w *pluginFileWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("%s: write after the file's commit or abort", w.c.label())
	}
	n := len(p)
	for len(p) > 0 && w.err == nil {
		k := min(len(p), cap(w.buf)-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == cap(w.buf) {
			w.send(false)
		}
	}
	if w.err != nil {
		return n - len(p), w.err
	}
	return n, nil
}

func (w *pluginFileWriter) send(commit bool) {
	if err := w.stream.Send(&pluginpb.WriteFileRequest{Chunk: w.buf, Commit: commit}); err != nil {
		if errors.Is(err, io.EOF) { // the plugin ended the call: Recv says why
			_, err = w.stream.Recv()
		}
		w.err = w.c.rpcErr(w.ctx, err)
	}
	w.buf = w.buf[:0]
}

func (w *pluginFileWriter) Commit() error {
	if w.done {
		return fmt.Errorf("%s: commit after the file's commit or abort", w.c.label())
	}
	w.done = true
	defer w.cancel()
	if w.err == nil {
		w.send(true)
	}
	if w.err == nil {
		if _, err := w.stream.Recv(); err != nil {
			w.err = w.c.rpcErr(w.ctx, err)
		}
	}
	return w.err
}

// Abort cancels the stream: the plugin aborts the file.
func (w *pluginFileWriter) Abort() error {
	if !w.done {
		w.done = true
		w.cancel()
	}
	return nil
}

// OpenFile opens a ReadFile stream; its first message carries the size.
func (c *checkpointStorageClient) OpenFile(ctx context.Context, topology, name string) (spi.FileReader, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.label(), err)
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := c.rpc.ReadFile(sctx, &pluginpb.FileRef{Topology: topology, Name: name})
	var first *pluginpb.ReadFileChunk
	if err == nil {
		first, err = stream.Recv()
	}
	if err == nil && first.GetSize() < 0 {
		err = fmt.Errorf("ReadFile announced %d bytes", first.GetSize())
	}
	if err != nil {
		cancel()
		return nil, c.rpcErr(ctx, err)
	}
	return &pluginFileReader{c: c, ctx: ctx, cancel: cancel, stream: stream, size: first.GetSize(), left: first.GetSize(), rest: first.GetChunk()}, nil
}

type pluginFileReader struct {
	c      *checkpointStorageClient
	ctx    context.Context
	cancel context.CancelFunc
	stream pluginpb.CheckpointStorage_ReadFileClient
	size   int64
	left   int64 // bytes not yet received
	rest   []byte
	err    error
}

func (r *pluginFileReader) Size() int64 { return r.size }

func (r *pluginFileReader) Read(p []byte) (int, error) {
	for len(r.rest) == 0 && r.err == nil {
		if r.left == 0 {
			r.err = io.EOF
			break
		}
		m, err := r.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				r.err = fmt.Errorf("%s: the file ended %d bytes early", r.c.label(), r.left)
			} else {
				r.err = r.c.rpcErr(r.ctx, err)
			}
			break
		}
		r.rest = m.GetChunk()
	}
	if len(r.rest) == 0 {
		return 0, r.err
	}
	n := copy(p, r.rest)
	if int64(n) > r.left {
		r.err = fmt.Errorf("%s: the file is longer than the announced %d bytes", r.c.label(), r.size)
		return 0, r.err
	}
	r.rest, r.left = r.rest[n:], r.left-int64(n)
	return n, nil
}

func (r *pluginFileReader) Close() error {
	r.cancel()
	return nil
}

func (c *checkpointStorageClient) ListFiles(ctx context.Context, topology string) ([]spi.FileInfo, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	r, err := c.rpc.ListFiles(ctx, &pluginpb.ListFilesRequest{Topology: topology})
	if err != nil {
		return nil, c.rpcErr(ctx, err)
	}
	out := make([]spi.FileInfo, len(r.GetFiles()))
	for i, f := range r.GetFiles() {
		out[i] = spi.FileInfo{Name: f.GetName(), Size: f.GetSize()}
	}
	return out, nil
}

func (c *checkpointStorageClient) DeleteFile(ctx context.Context, topology, name string) error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.rpc.DeleteFile(ctx, &pluginpb.FileRef{Topology: topology, Name: name})
	return c.rpcErr(ctx, err)
}
