// Package pkgio holds the file handling shared by Egret's uploaders, the
// package server and the fetch side: atomic, hashing writes (temp file in the
// destination directory, fsync, rename), SHA-256 helpers and the rules for
// package object names.
package pkgio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/egret-stream/egret/core/spi"
)

// ErrChecksumMismatch is returned (wrapped) when the SHA-256 of written or
// received bytes differs from the expected one.
var ErrChecksumMismatch = errors.New("sha256 mismatch")

// ErrTooLarge is returned (wrapped) when a copy exceeds its size limit.
var ErrTooLarge = errors.New("larger than the size limit")

// TempPrefix starts the name of every temporary file. Valid object names
// never start with a dot, so a temp file can never be served or undone.
const TempPrefix = ".egret-tmp-"

const copyBuf = 256 << 10

// HashWriter passes writes on to an io.Writer, counting and hashing
// (SHA-256) what was written.
type HashWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

// NewHashWriter returns a HashWriter writing to w.
func NewHashWriter(w io.Writer) *HashWriter { return &HashWriter{w: w, h: sha256.New()} }

// Write implements io.Writer.
func (w *HashWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	return n, err
}

// Size is the number of bytes written so far.
func (w *HashWriter) Size() int64 { return w.n }

// SHA256 is the hex digest of the bytes written so far.
func (w *HashWriter) SHA256() string { return hex.EncodeToString(w.h.Sum(nil)) }

// CopyContext copies r to w in chunks, checking ctx between them. When
// max > 0 a source longer than max bytes fails with ErrTooLarge.
func CopyContext(ctx context.Context, w io.Writer, r io.Reader, max int64) (int64, error) {
	if max > 0 {
		r = io.LimitReader(r, max+1)
	}
	buf := make([]byte, copyBuf)
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		nr, rerr := r.Read(buf)
		if nr > 0 {
			if max > 0 && total+int64(nr) > max {
				return total, fmt.Errorf("more than %d bytes: %w", max, ErrTooLarge)
			}
			nw, werr := w.Write(buf[:nr])
			total += int64(nw)
			if werr != nil {
				return total, werr
			}
		}
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

// Writer writes a file under a temporary name in its final directory,
// hashing what it writes; Commit renames it into place so a reader never
// sees a partial file. Abort (safe to defer) removes the temp file unless
// Commit succeeded.
type Writer struct {
	*HashWriter
	f    *os.File
	done bool
}

// NewWriter creates a temp file in dir.
func NewWriter(dir string) (*Writer, error) {
	f, err := os.CreateTemp(dir, TempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	return &Writer{HashWriter: NewHashWriter(f), f: f}, nil
}

// Copy copies r into the file, checking ctx between chunks. When max > 0 a
// file longer than max bytes in all fails with ErrTooLarge.
func (w *Writer) Copy(ctx context.Context, r io.Reader, max int64) (int64, error) {
	limit := int64(0)
	if max > 0 {
		limit = max - w.n
	}
	n, err := CopyContext(ctx, w.HashWriter, r, limit)
	if errors.Is(err, ErrTooLarge) {
		return n, fmt.Errorf("more than %d bytes: %w", max, ErrTooLarge)
	}
	return n, err
}

// Stat describes the temp file; the FileInfo stays valid for the committed
// file (os.SameFile), because rename keeps the inode.
func (w *Writer) Stat() (os.FileInfo, error) { return w.f.Stat() }

// Commit flushes the file to disk, sets perm and renames it to path, which
// must be in the directory given to NewWriter.
func (w *Writer) Commit(path string, perm os.FileMode) error {
	if w.done {
		return errors.New("pkgio: Commit after Commit or Abort")
	}
	tmp := w.f.Name()
	if err := w.f.Chmod(perm); err != nil {
		w.Abort()
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := w.f.Sync(); err != nil {
		w.Abort()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := w.f.Close(); err != nil {
		w.Abort()
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		w.done = true
		os.Remove(tmp)
		return fmt.Errorf("rename %s to %s: %w", tmp, path, err)
	}
	w.done = true
	syncDir(filepath.Dir(path))
	return nil
}

// Abort closes and removes the temp file; it does nothing after Commit.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	os.Remove(w.f.Name())
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: not every file system supports it
		d.Close()
	}
}

// WriteFile copies r to path atomically. When wantSHA is not empty the bytes
// must hash to it, else nothing is written and the error wraps
// ErrChecksumMismatch. max > 0 caps the size (ErrTooLarge). It returns the
// digest and size of what was written.
func WriteFile(ctx context.Context, path string, r io.Reader, wantSHA string, max int64, perm os.FileMode) (string, int64, error) {
	w, err := NewWriter(filepath.Dir(path))
	if err != nil {
		return "", 0, err
	}
	defer w.Abort()
	if _, err := w.Copy(ctx, r, max); err != nil {
		return "", w.Size(), err
	}
	got := w.SHA256()
	if err := CheckSHA256(wantSHA, got); err != nil {
		return got, w.Size(), err
	}
	if err := w.Commit(path, perm); err != nil {
		return got, w.Size(), err
	}
	return got, w.Size(), nil
}

// CheckSHA256 compares an expected digest (may be empty: no check) with the
// actual one.
func CheckSHA256(want, got string) error {
	if want == "" || strings.EqualFold(want, got) {
		return nil
	}
	return fmt.Errorf("%w: expected %s, got %s", ErrChecksumMismatch, strings.ToLower(want), got)
}

// NormalizeSHA256 lower-cases a hex digest and checks its form; the empty
// string is accepted and returned unchanged.
func NormalizeSHA256(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	s = strings.ToLower(strings.TrimSpace(s))
	if len(s) != 64 {
		return "", fmt.Errorf("sha256 %q is not 64 hex digits", s)
	}
	if _, err := hex.DecodeString(s); err != nil {
		return "", fmt.Errorf("sha256 %q is not 64 hex digits", s)
	}
	return s, nil
}

// FileSHA256 returns the hex SHA-256 and size of the file at path.
func FileSHA256(ctx context.Context, path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, copyBuf)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return "", n, err
		}
		nr, rerr := f.Read(buf)
		h.Write(buf[:nr])
		n += int64(nr)
		if rerr == io.EOF {
			return hex.EncodeToString(h.Sum(nil)), n, nil
		}
		if rerr != nil {
			return "", n, fmt.Errorf("read %s: %w", path, rerr)
		}
	}
}

// ValidName reports whether name may be used as a stored object name: 1 to
// 255 characters from [A-Za-z0-9._-], not starting with a dot (which rules
// out ".", ".." and temp files).
func ValidName(name string) error {
	if name == "" {
		return errors.New("empty package name")
	}
	if len(name) > 255 {
		return fmt.Errorf("package name of %d characters is longer than 255", len(name))
	}
	if name[0] == '.' {
		return fmt.Errorf("package name %q starts with a dot", name)
	}
	for i := 0; i < len(name); i++ {
		if !nameChar(name[i]) {
			return fmt.Errorf("package name %q contains %q; only A-Z a-z 0-9 . _ - are allowed", name, name[i])
		}
	}
	return nil
}

func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// ObjectName is the stored name of pkg's file with digest sha:
// "<topology>-<role>-<sha256[:12]>.tar.gz". Topology and role must be made
// of [A-Za-z0-9._-] and not start with a dot.
func ObjectName(pkg spi.Package, sha string) (string, error) {
	if err := CheckNames(pkg); err != nil {
		return "", err
	}
	if len(sha) < 12 {
		return "", fmt.Errorf("sha256 %q too short", sha)
	}
	return pkg.Topology + "-" + pkg.Role + "-" + sha[:12] + ".tar.gz", nil
}

// CheckNames checks that pkg's topology and role can form an object name.
func CheckNames(pkg spi.Package) error {
	for _, f := range []struct{ what, v string }{{"topology", pkg.Topology}, {"role", pkg.Role}} {
		if f.v == "" {
			return fmt.Errorf("package has no %s name", f.what)
		}
		if err := ValidName(f.v); err != nil {
			return fmt.Errorf("%s name %q cannot be used in a package file name (use only A-Z a-z 0-9 . _ - and no leading dot)", f.what, f.v)
		}
	}
	return nil
}

// PreparePackage checks pkg and its file, and returns the file's digest
// (computing it, or verifying it against pkg.SHA256) and size. A missing
// file's error wraps fs.ErrNotExist and names the path.
func PreparePackage(ctx context.Context, pkg spi.Package) (sha string, size int64, err error) {
	if err := CheckNames(pkg); err != nil {
		return "", 0, err
	}
	if pkg.Path == "" {
		return "", 0, errors.New("package has no file path")
	}
	want, err := NormalizeSHA256(pkg.SHA256)
	if err != nil {
		return "", 0, fmt.Errorf("package %s: %w", pkg.Path, err)
	}
	fi, err := os.Stat(pkg.Path)
	if err != nil {
		return "", 0, fmt.Errorf("package file %s: %w", pkg.Path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", 0, fmt.Errorf("package file %s is not a regular file (mode %s)", pkg.Path, fi.Mode())
	}
	got, n, err := FileSHA256(ctx, pkg.Path)
	if err != nil {
		return "", 0, fmt.Errorf("hash package file %s: %w", pkg.Path, err)
	}
	if err := CheckSHA256(want, got); err != nil {
		return "", 0, fmt.Errorf("package file %s does not match Package.SHA256: %w", pkg.Path, err)
	}
	return got, n, nil
}
