package fetch

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/egret-stream/egret/internal/pkgio"
)

// epoch is the modification time of every entry CreateTarGz writes.
var epoch = time.Unix(0, 0).UTC()

// CreateTarGz writes a gzip-compressed tarball to dst holding the given
// files (name in the archive, a clean relative slash path -> source file)
// and returns its hex SHA-256. The output is deterministic: entries are
// sorted by name, with fixed mtimes, owner 0 and mode 0755 for sources
// with any execute bit and 0644 otherwise, so the same inputs give the
// same digest. dst is written atomically.
func CreateTarGz(dst string, files map[string]string) (sha256hex string, err error) {
	if len(files) == 0 {
		return "", errors.New("create package: no files")
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if err := archiveName(name); err != nil {
			return "", fmt.Errorf("create package: archive name %q: %w", name, err)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	w, err := pkgio.NewWriter(filepath.Dir(dst))
	if err != nil {
		return "", fmt.Errorf("create package %s: %w", dst, err)
	}
	defer w.Abort()
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, name := range names {
		if err := addFile(tw, name, files[name]); err != nil {
			return "", fmt.Errorf("create package %s: %w", dst, err)
		}
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("create package %s: %w", dst, err)
	}
	if err := gz.Close(); err != nil {
		return "", fmt.Errorf("create package %s: %w", dst, err)
	}
	sha := w.SHA256()
	if err := w.Commit(dst, 0o644); err != nil {
		return "", fmt.Errorf("create package: %w", err)
	}
	return sha, nil
}

func archiveName(name string) error {
	switch {
	case name == "":
		return errors.New("empty")
	case strings.ContainsAny(name, "\x00\\"):
		return errors.New("contains a NUL byte or a backslash")
	case path.Clean(name) != name || name == "." || !filepath.IsLocal(filepath.FromSlash(name)):
		return errors.New("must be a clean relative path without .. (like bin/topology)")
	}
	return nil
}

func addFile(tw *tar.Writer, name, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	mode := int64(0o644)
	if fi.Mode().Perm()&0o111 != 0 {
		mode = 0o755
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     mode,
		Size:     fi.Size(),
		ModTime:  epoch,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return fmt.Errorf("%s: copy %s (did it change while packing?): %w", name, src, err)
	}
	return nil
}

// SHA256File returns the hex SHA-256 of the file at path.
func SHA256File(ctx context.Context, path string) (string, error) {
	sha, _, err := pkgio.FileSHA256(ctx, path)
	return sha, err
}
