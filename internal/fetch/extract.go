package fetch

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Defaults of ExtractOptions.
const (
	DefaultExtractMaxBytes   = 8 << 30
	DefaultExtractMaxEntries = 100_000
)

// maxLinkHops bounds symlink resolution while checking links.
const maxLinkHops = 40

// ExtractOptions bound what an archive may unpack. The zero value uses the
// defaults.
type ExtractOptions struct {
	// MaxBytes caps the total size of the regular files (default 8 GiB).
	MaxBytes int64
	// MaxEntries caps the number of entries (default 100,000).
	MaxEntries int
}

// Extract unpacks the gzip-compressed tarball at tarGzPath into dstDir
// (created if needed) with default limits. See ExtractWith.
func Extract(ctx context.Context, tarGzPath, dstDir string) error {
	return ExtractWith(ctx, tarGzPath, dstDir, ExtractOptions{})
}

// ExtractWith unpacks the gzip-compressed tarball at tarGzPath into dstDir.
//
// Regular files keep their permission bits (so executables stay
// executable; setuid, setgid and sticky bits are dropped); directories get
// at least rwx for the owner. Entries with absolute names or names that
// leave dstDir, symlinks with absolute targets or targets resolving outside
// dstDir, hard links to anything but an earlier regular file, device nodes
// and FIFOs are rejected, as are archives over the limits. Symlinks are
// created after every other entry and checked against the final tree.
// On error the entries extracted so far stay in dstDir (nothing is ever
// written outside it); callers extract into a fresh directory.
func ExtractWith(ctx context.Context, tarGzPath, dstDir string, opts ExtractOptions) error {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultExtractMaxBytes
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultExtractMaxEntries
	}
	f, err := os.Open(tarGzPath)
	if err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	defer f.Close()
	if err := os.MkdirAll(dstDir, 0o755); err != nil {
		return fmt.Errorf("extract %s: create target: %w", tarGzPath, err)
	}
	root, err := os.OpenRoot(dstDir)
	if err != nil {
		return fmt.Errorf("extract %s: %w", tarGzPath, err)
	}
	defer root.Close()
	x := extractor{root: root, opts: opts}
	if err := x.run(ctx, f); err != nil {
		return fmt.Errorf("extract %s into %s: %w", tarGzPath, dstDir, err)
	}
	return nil
}

type symlink struct{ name, target string }

type extractor struct {
	root    *os.Root
	opts    ExtractOptions
	bytes   int64
	entries int
	links   []symlink
}

func (x *extractor) run(ctx context.Context, r io.Reader) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("not a gzip file: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read archive after %d entries: %w", x.entries, err)
		}
		x.entries++
		if x.entries > x.opts.MaxEntries {
			return fmt.Errorf("more than %d entries: %w", x.opts.MaxEntries, ErrTooLarge)
		}
		if err := x.entry(ctx, hdr, tr); err != nil {
			return fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
	}
	return x.finishLinks()
}

// cleanName turns an archive name into a local slash path ("" for the
// archive's root directory itself).
func cleanName(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty name")
	}
	if strings.ContainsAny(name, "\x00\\") {
		return "", errors.New("name contains a NUL byte or a backslash")
	}
	if strings.HasPrefix(name, "/") {
		return "", errors.New("absolute name")
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == ".." {
			return "", errors.New("name contains \"..\"")
		}
	}
	c := path.Clean(name)
	if c == "." {
		return "", nil
	}
	if !filepath.IsLocal(filepath.FromSlash(c)) {
		return "", errors.New("name is not local to the target directory")
	}
	return c, nil
}

func (x *extractor) entry(ctx context.Context, hdr *tar.Header, tr *tar.Reader) error {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	name, err := cleanName(hdr.Name)
	if err != nil {
		return err
	}
	if name == "" {
		if hdr.Typeflag == tar.TypeDir {
			return nil
		}
		return errors.New("non-directory entry for the target directory itself")
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := x.root.MkdirAll(name, 0o755); err != nil {
			return err
		}
		return x.root.Chmod(name, fs.FileMode(hdr.Mode)&0o777|0o700)
	case tar.TypeReg, '\x00': // '\x00' (the deprecated TypeRegA) is still written by old tools
		return x.regular(ctx, name, hdr, tr)
	case tar.TypeSymlink:
		t := hdr.Linkname
		if t == "" || strings.ContainsAny(t, "\x00\\") {
			return errors.New("symlink with an empty target or one containing NUL or backslash")
		}
		if strings.HasPrefix(t, "/") {
			return fmt.Errorf("symlink to absolute path %q", t)
		}
		if !filepath.IsLocal(filepath.FromSlash(path.Join(path.Dir(name), t))) {
			return fmt.Errorf("symlink to %q points outside the target directory", t)
		}
		x.links = append(x.links, symlink{name: name, target: t})
		return nil
	case tar.TypeLink:
		target, err := cleanName(hdr.Linkname)
		if err == nil && target == "" {
			err = errors.New("names the target directory itself")
		}
		if err != nil {
			return fmt.Errorf("hard link to %q: %w", hdr.Linkname, err)
		}
		fi, err := x.root.Lstat(target)
		if err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("hard link to %q: target is not a regular file extracted earlier", hdr.Linkname)
		}
		if err := x.prepare(name); err != nil {
			return err
		}
		return x.root.Link(target, name)
	default:
		return fmt.Errorf("unsupported entry type %q (only files, directories and links are allowed)", hdr.Typeflag)
	}
}

// prepare creates name's parent and removes a non-directory already at
// name, so tar's "later entry wins" holds and a symlink is never followed.
func (x *extractor) prepare(name string) error {
	if dir := path.Dir(name); dir != "." {
		if err := x.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	fi, err := x.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return errors.New("a directory of that name already exists")
	default:
		return x.root.Remove(name)
	}
}

func (x *extractor) regular(ctx context.Context, name string, hdr *tar.Header, tr *tar.Reader) error {
	if hdr.Size < 0 || hdr.Size > x.opts.MaxBytes-x.bytes {
		return fmt.Errorf("size %d exceeds the remaining limit of %d bytes: %w", hdr.Size, x.opts.MaxBytes-x.bytes, ErrTooLarge)
	}
	if err := x.prepare(name); err != nil {
		return err
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := copyCtx(ctx, f, tr, hdr.Size)
	x.bytes += n
	if err == nil {
		err = f.Chmod(fs.FileMode(hdr.Mode) & 0o777)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func copyCtx(ctx context.Context, w io.Writer, r io.Reader, n int64) (int64, error) {
	var done int64
	for done < n {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		c, err := io.CopyN(w, r, min(n-done, 1<<20))
		done += c
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return done, err
		}
	}
	return done, nil
}

// finishLinks creates the deferred symlinks, then checks each against the
// final tree and removes (and reports) any that resolves outside.
func (x *extractor) finishLinks() error {
	for _, l := range x.links {
		if err := x.prepare(l.name); err != nil {
			return fmt.Errorf("symlink %q: %w", l.name, err)
		}
		if err := x.root.Symlink(l.target, l.name); err != nil {
			return fmt.Errorf("symlink %q: %w", l.name, err)
		}
	}
	var bad error
	for _, l := range x.links {
		if inside(x.root, l.name) {
			continue
		}
		x.root.Remove(l.name)
		if bad == nil {
			bad = fmt.Errorf("symlink %q -> %q resolves outside the target directory", l.name, l.target)
		}
	}
	return bad
}

// inside reports whether resolving rel under root, following the symlinks
// on disk, stays within root. Past a missing component the rest is resolved
// lexically.
func inside(root *os.Root, rel string) bool {
	var stack []string
	pending := strings.Split(rel, "/")
	hops := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return false
			}
			stack = stack[:len(stack)-1]
			continue
		}
		cand := path.Join(append(append([]string{}, stack...), c)...)
		fi, err := root.Lstat(cand)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			stack = append(stack, c)
			continue
		}
		hops++
		if hops > maxLinkHops {
			return false
		}
		t, err := root.Readlink(cand)
		if err != nil || strings.HasPrefix(t, "/") {
			return false
		}
		pending = append(strings.Split(t, "/"), pending...)
	}
	return true
}
