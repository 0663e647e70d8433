package spi

import (
	"context"
	"fmt"
	"io"
	"time"
)

// CheckpointFiles is the capability of a checkpoint storage to keep the
// files a task's checkpoint consists of (docs/checkpoints.md): a state far
// larger than memory is streamed into files, and a small manifest that names
// them is stored last with CheckpointStorage.Store. Files live in one flat
// area per topology, apart from the checkpoints' manifests: a file may be
// shared by the checkpoints of a task (an incremental checkpoint refers to
// the files of earlier ones), and the checkpoint manager deletes a file once
// no retained manifest refers to it.
//
// Contract (checkpoints/checkpointtest checks it):
//   - CreateFile starts a file; nothing is visible under its name until
//     Commit returns nil, after which OpenFile reads exactly the bytes
//     written, also after a crash (the commit is atomic and durable). Abort,
//     a failed write or commit, an ended context or a crash of the writer
//     leaves the name as it was (absent, or the bytes of an earlier commit)
//     and no file ListFiles shows. Committing a name again replaces it.
//     The writer holds no more than a bounded buffer in memory, whatever
//     the file's size.
//   - OpenFile reads a committed file, or fails with an error wrapping
//     ErrNotFound. Size is the committed size.
//   - ListFiles lists the committed files of a topology, sorted by name;
//     none is an empty (non-nil) list.
//   - DeleteFile removes a file; a missing file is not an error.
//   - Names are checked with CheckFileName; topology names as in
//     CheckpointStorage. A bad name is refused with an error, never reaches
//     outside the storage's root, and never names a manifest.
//   - Every method honours ctx (an ended context fails with an error
//     wrapping ctx.Err() and changes nothing); calls after Close fail with
//     ErrClosed. Files are safe for concurrent use from several storages
//     (containers) on different names.
type CheckpointFiles interface {
	CreateFile(ctx context.Context, topology, name string) (FileWriter, error)
	OpenFile(ctx context.Context, topology, name string) (FileReader, error)
	ListFiles(ctx context.Context, topology string) ([]FileInfo, error)
	DeleteFile(ctx context.Context, topology, name string) error
}

// TempRemover is the capability of a checkpoint storage to remove what
// writers that died left behind: temporary files (a file or a state being
// written when its writer crashed, never committed) and checkpoints caught
// while being deleted. No List, ListFiles or Load shows them; the
// checkpoint manager's clean calls RemoveTemps.
//
// Contract (checkpoints/checkpointtest checks it): RemoveTemps removes the
// temporary entries of topology last modified before olderThan and returns
// how many it removed; one modified since (still being written) stays, and
// its writer's Commit still works. An entry another container removed
// meanwhile is not an error.
type TempRemover interface {
	RemoveTemps(ctx context.Context, topology string, olderThan time.Time) (int, error)
}

// FileWriter writes one checkpoint file. Write may be called many times;
// then exactly one of Commit or Abort (Abort after Commit does nothing).
type FileWriter interface {
	io.Writer
	Commit() error
	Abort() error
}

// FileReader reads one committed checkpoint file.
type FileReader interface {
	io.ReadCloser
	Size() int64
}

// FileInfo describes a committed checkpoint file.
type FileInfo struct {
	Name string
	Size int64
}

// MaxFileName bounds the length of a checkpoint file's name.
const MaxFileName = 200

// CheckFileName checks the name of a checkpoint file: 1 to MaxFileName
// bytes of ASCII letters, digits, '.', '_' and '-', not starting with '.'
// (so it is one path element everywhere, and never a temporary file).
func CheckFileName(name string) error {
	if name == "" || len(name) > MaxFileName {
		return fmt.Errorf("checkpoint file name %q: want 1 to %d characters", name, MaxFileName)
	}
	if name[0] == '.' {
		return fmt.Errorf("checkpoint file name %q starts with '.'", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("checkpoint file name %q: character %q is not allowed (letters, digits, '.', '_', '-')", name, c)
		}
	}
	return nil
}

// FilesOf returns the file capability of a checkpoint storage, or an error
// wrapping ErrUnsupported naming what is missing.
func FilesOf(st CheckpointStorage) (CheckpointFiles, error) {
	f, ok := st.(CheckpointFiles)
	if !ok {
		return nil, fmt.Errorf("checkpoint storage %T keeps no files (it does not implement spi.CheckpointFiles; a plugin built before files existed must be rebuilt): %w", st, ErrUnsupported)
	}
	return f, nil
}
