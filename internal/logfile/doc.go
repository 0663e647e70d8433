// Package logfile is a file that rotates by size, for the logs of the
// processes an executor runs and for the metrics manager's file sink.
//
// A File appends to its path. Before a write that would take a non-empty
// file past Limits.MaxSize, the file is rotated: <path>.N-1 becomes
// <path>.N, ..., <path> becomes <path>.1 (N = Limits.MaxFiles; what was
// <path>.N, and any rotation beyond N left by an earlier, larger limit, is
// deleted) and a new, empty <path> is started. A write is never split, so
// a file exceeds MaxSize only by a single write larger than MaxSize. With
// MaxFiles 0 nothing is kept: the file starts again empty.
//
// Rotation renames files while the current one is still open, so a failed
// rotation (a full disk, a permission problem) loses nothing: it is logged
// and the file keeps growing until a later write rotates it.
package logfile
