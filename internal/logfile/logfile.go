package logfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"

	"go.uber.org/zap"
)

// Limits bound a log.
type Limits struct {
	// MaxSize is the size in bytes at which the file is rotated (> 0).
	MaxSize int64
	// MaxFiles is how many rotated files are kept besides the current one
	// (>= 0).
	MaxFiles int
}

// Validate reports limits that cannot be used.
func (l Limits) Validate() error {
	if l.MaxSize <= 0 {
		return fmt.Errorf("log max size %d must be positive", l.MaxSize)
	}
	if l.MaxFiles < 0 {
		return fmt.Errorf("log max files %d must not be negative", l.MaxFiles)
	}
	return nil
}

// File is a log file rotated by size. It is safe for concurrent use.
type File struct {
	path   string
	limits Limits
	log    *zap.Logger

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open opens (creating if needed) the log at path for appending. log
// receives rotation failures; nil discards them.
func Open(path string, limits Limits, log *zap.Logger) (*File, error) {
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	lf := &File{path: path, limits: limits, log: log}
	if err := lf.open(); err != nil {
		return nil, err
	}
	return lf, nil
}

func (lf *File) open() error {
	f, err := os.OpenFile(lf.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open log file: %w", err)
	}
	lf.f, lf.size = f, st.Size()
	return nil
}

// Write appends p, rotating the file first when p would take it past the
// maximum size.
func (lf *File) Write(p []byte) (int, error) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.f == nil {
		return 0, fs.ErrClosed
	}
	if lf.size > 0 && lf.size+int64(len(p)) > lf.limits.MaxSize {
		if err := lf.rotate(); err != nil {
			lf.log.Warn("cannot rotate the log file; it keeps growing", zap.String("path", lf.path), zap.Error(err))
		}
	}
	n, err := lf.f.Write(p)
	lf.size += int64(n)
	return n, err
}

// rotate shifts the rotated files up by one, renames the current file to
// <path>.1 and opens a new one. The current file stays open until the new
// one is, so a failure keeps writing where it was.
func (lf *File) rotate() error {
	n := lf.limits.MaxFiles
	// Rotations beyond the limit (left by a larger one) go first.
	for i := n + 1; ; i++ {
		if err := os.Remove(lf.rotated(i)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			return err
		}
	}
	for i := n - 1; i >= 1; i-- {
		if err := os.Rename(lf.rotated(i), lf.rotated(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	var err error
	if n == 0 {
		err = os.Remove(lf.path)
	} else {
		err = os.Rename(lf.path, lf.rotated(1))
	}
	if err != nil {
		return err
	}
	old := lf.f
	if err := lf.open(); err != nil {
		// The renamed file is still open: keep appending to it.
		return err
	}
	return old.Close()
}

func (lf *File) rotated(i int) string { return lf.path + "." + strconv.Itoa(i) }

// Close closes the file; later writes fail with fs.ErrClosed.
func (lf *File) Close() error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.f == nil {
		return nil
	}
	err := lf.f.Close()
	lf.f = nil
	return err
}
