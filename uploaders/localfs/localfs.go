package localfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/pkgio"
	"github.com/egret-stream/egret/internal/safepath"
)

// KeyDirectory is the config key naming the repository directory.
const KeyDirectory = "egret.uploader.localfs.directory"

func init() { spi.RegisterUploader("localfs", New, configKeys...) }

// Uploader copies packages into a directory.
type Uploader struct {
	dir    string
	log    *zap.Logger
	closed atomic.Bool
}

var (
	_ spi.Uploader     = (*Uploader)(nil)
	_ spi.URIPreviewer = (*Uploader)(nil)
)

// New builds a localfs uploader from cfg; egret.uploader.localfs.directory
// is required and made absolute. The directory is created on first upload.
func New(cfg spi.Config, log *zap.Logger) (spi.Uploader, error) {
	dir := cfg.String(KeyDirectory, "")
	if dir == "" {
		return nil, fmt.Errorf("localfs uploader: config key %s is required (the directory the containers read packages from, e.g. ${HOME}/.egret/repository/${CLUSTER}/${ROLE}/${TOPOLOGY})", KeyDirectory)
	}
	if strings.Contains(dir, "${") {
		return nil, fmt.Errorf("localfs uploader: config key %s = %q has an unsubstituted variable", KeyDirectory, dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localfs uploader: config key %s: %w", KeyDirectory, err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Uploader{dir: abs, log: log.With(zap.String("uploader", "localfs"))}, nil
}

// Dir is the repository directory.
func (u *Uploader) Dir() string { return u.dir }

// Upload copies pkg.Path into the directory in one pass, hashing what it
// writes; when pkg.SHA256 is given a mismatch fails the upload and leaves
// nothing behind.
func (u *Uploader) Upload(ctx context.Context, pkg spi.Package) (string, error) {
	if u.closed.Load() {
		return "", fmt.Errorf("localfs uploader: %w", spi.ErrClosed)
	}
	uri, err := u.upload(ctx, pkg)
	if err != nil {
		return "", fmt.Errorf("localfs upload of %s to %s: %w", pkg.Path, u.dir, err)
	}
	return uri, nil
}

func (u *Uploader) upload(ctx context.Context, pkg spi.Package) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := pkgio.CheckNames(pkg); err != nil {
		return "", err
	}
	if pkg.Path == "" {
		return "", errors.New("package has no file path")
	}
	want, err := pkgio.NormalizeSHA256(pkg.SHA256)
	if err != nil {
		return "", err
	}
	src, err := os.Open(pkg.Path)
	if err != nil {
		return "", fmt.Errorf("package file: %w", err)
	}
	defer src.Close()
	if fi, err := src.Stat(); err != nil {
		return "", fmt.Errorf("package file: %w", err)
	} else if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("package file is not a regular file (mode %s)", fi.Mode())
	}
	if err := os.MkdirAll(u.dir, 0o755); err != nil {
		return "", fmt.Errorf("create repository directory: %w", err)
	}
	w, err := pkgio.NewWriter(u.dir)
	if err != nil {
		return "", err
	}
	defer w.Abort()
	if _, err := w.Copy(ctx, src, 0); err != nil {
		return "", fmt.Errorf("copy: %w", err)
	}
	sha := w.SHA256()
	if err := pkgio.CheckSHA256(want, sha); err != nil {
		return "", fmt.Errorf("copied file does not match Package.SHA256: %w", err)
	}
	name, err := pkgio.ObjectName(pkg, sha)
	if err != nil {
		return "", err
	}
	dst, err := safepath.Join(u.dir, name)
	if err != nil {
		return "", err
	}
	if err := w.Commit(dst, 0o644); err != nil {
		return "", err
	}
	uri := fileURI(dst)
	u.log.Info("uploaded package", zap.String("topology", pkg.Topology), zap.String("uri", uri),
		zap.Int64("bytes", w.Size()), zap.String("sha256", sha))
	return uri, nil
}

// PreviewURI returns the URI Upload would return for pkg: the package file
// is read (and hashed when pkg.SHA256 is empty), the directory is neither
// created nor written.
func (u *Uploader) PreviewURI(ctx context.Context, pkg spi.Package) (string, error) {
	sha, _, err := pkgio.PreparePackage(ctx, pkg)
	if err != nil {
		return "", fmt.Errorf("localfs preview of %s: %w", pkg.Path, err)
	}
	name, err := pkgio.ObjectName(pkg, sha)
	if err != nil {
		return "", fmt.Errorf("localfs preview of %s: %w", pkg.Path, err)
	}
	return fileURI(filepath.Join(u.dir, name)), nil
}

func fileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// Undo deletes the file uri names. A missing file is success; a URI
// outside the repository directory is refused rather than deleted.
func (u *Uploader) Undo(ctx context.Context, uri string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("localfs undo %s: %w", uri, err)
	}
	p, err := u.pathOf(uri)
	if err != nil {
		return fmt.Errorf("localfs undo %s: %w", uri, err)
	}
	err = os.Remove(p)
	switch {
	case err == nil:
		u.log.Info("removed package", zap.String("uri", uri))
		return nil
	case errors.Is(err, fs.ErrNotExist):
		u.log.Debug("package already absent", zap.String("uri", uri))
		return nil
	default:
		return fmt.Errorf("localfs undo %s: %w", uri, err)
	}
}

// pathOf maps a file:// URI (or absolute path) to a file directly inside
// the repository directory.
func (u *Uploader) pathOf(uri string) (string, error) {
	p := uri
	if !filepath.IsAbs(uri) {
		pu, err := url.Parse(uri)
		if err != nil {
			return "", err
		}
		if pu.Scheme != "file" || (pu.Host != "" && pu.Host != "localhost") {
			return "", fmt.Errorf("not a local file:// URI; the localfs uploader cannot have produced it")
		}
		p = filepath.FromSlash(pu.Path)
	}
	p = filepath.Clean(p)
	if filepath.Dir(p) != u.dir {
		return "", fmt.Errorf("%s is not in the repository directory %s; refusing to delete it (was %s changed since the upload?)", p, u.dir, KeyDirectory)
	}
	if err := pkgio.ValidName(filepath.Base(p)); err != nil {
		return "", fmt.Errorf("refusing to delete: %w", err)
	}
	return safepath.Join(u.dir, filepath.Base(p))
}

// Close marks the uploader closed; it holds no other resources.
func (u *Uploader) Close() error {
	u.closed.Store(true)
	return nil
}
