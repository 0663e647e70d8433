package hdfs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	hdfsclient "github.com/colinmarc/hdfs/v2"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/hdfsx"
	"github.com/egret-stream/egret/internal/pkgio"
)

// Config keys of the uploader (conf/REFERENCE.md describes them).
const (
	KeyNameNode      = "egret.uploader.hdfs.namenode"
	KeyDirectory     = "egret.uploader.hdfs.directory"
	KeyUser          = "egret.uploader.hdfs.user"
	KeyReplication   = "egret.uploader.hdfs.replication"
	KeyFilePerm      = "egret.uploader.hdfs.file.permission"
	KeyDirectoryPerm = "egret.uploader.hdfs.directory.permission"
	KeyTimeout       = "egret.uploader.hdfs.timeout"
)

func init() { spi.RegisterUploader("hdfs", New, configKeys...) }

// Settings is the uploader's config, parsed.
type Settings struct {
	// NameNodes are host:port addresses; the first names the returned URIs.
	NameNodes   []string
	Directory   string
	User        string
	Replication int
	FilePerm    os.FileMode
	DirPerm     os.FileMode
	Timeout     time.Duration
}

// ParseSettings reads the uploader's keys from cfg, reporting every bad
// value at once.
func ParseSettings(cfg spi.Config) (Settings, error) {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var s Settings
	client, cerrs := hdfsx.ParseClient(cfg, hdfsx.ClientKeys{NameNode: KeyNameNode, User: KeyUser, Timeout: KeyTimeout})
	errs = append(errs, cerrs...)
	s.NameNodes, s.User, s.Timeout = client.NameNodes, client.User, client.Timeout
	s.Directory = cfg.String(KeyDirectory, "")
	switch {
	case s.Directory == "":
		add(fmt.Errorf("config key %s is required (an HDFS directory per topology, e.g. /egret/topologies/${CLUSTER}/${ROLE}/${TOPOLOGY})", KeyDirectory))
	case strings.Contains(s.Directory, "${"):
		add(fmt.Errorf("config key %s = %q has an unsubstituted variable", KeyDirectory, s.Directory))
	case !path.IsAbs(s.Directory) || strings.Contains(s.Directory, "://"):
		add(fmt.Errorf("config key %s = %q: give an absolute HDFS path such as /egret/topologies/wordcount (the NameNode is %s)", KeyDirectory, s.Directory, KeyNameNode))
	case path.Clean(s.Directory) == "/":
		add(fmt.Errorf("config key %s: the root directory cannot hold packages; give a directory per topology", KeyDirectory))
	default:
		s.Directory = path.Clean(s.Directory)
	}
	var err error
	s.Replication, err = cfg.Int(KeyReplication, 0)
	add(err)
	if err == nil && (s.Replication < 0 || s.Replication > 512) {
		add(fmt.Errorf("config key %s: %d is out of range (0 for the NameNode's default, or 1 to 512)", KeyReplication, s.Replication))
	}
	s.FilePerm, err = perm(cfg, KeyFilePerm, 0o644)
	add(err)
	s.DirPerm, err = perm(cfg, KeyDirectoryPerm, 0o755)
	add(err)
	if len(errs) > 0 {
		return Settings{}, fmt.Errorf("hdfs uploader: bad config: %w", errors.Join(errs...))
	}
	return s, nil
}

func perm(cfg spi.Config, key string, def os.FileMode) (os.FileMode, error) {
	v := cfg.String(key, "")
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil || n > 0o777 {
		return 0, fmt.Errorf("config key %s: %q is not an octal permission such as 0644", key, v)
	}
	return os.FileMode(n), nil
}

// Uploader stores packages in an HDFS directory.
type Uploader struct {
	s      Settings
	user   string
	log    *zap.Logger
	closed atomic.Bool
}

var (
	_ spi.Uploader     = (*Uploader)(nil)
	_ spi.Checker      = (*Uploader)(nil)
	_ spi.URIPreviewer = (*Uploader)(nil)
)

// New builds the uploader from cfg. It does not contact HDFS.
func New(cfg spi.Config, log *zap.Logger) (spi.Uploader, error) {
	s, err := ParseSettings(cfg)
	if err != nil {
		return nil, err
	}
	u, err := hdfsx.User(s.User)
	if err != nil {
		return nil, fmt.Errorf("hdfs uploader: %w", err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Uploader{s: s, user: u, log: log.With(zap.String("uploader", "hdfs"))}, nil
}

// Settings returns the parsed config.
func (u *Uploader) Settings() Settings { return u.s }

// Upload writes pkg.Path into the directory and returns its hdfs:// URI.
func (u *Uploader) Upload(ctx context.Context, pkg spi.Package) (string, error) {
	if u.closed.Load() {
		return "", fmt.Errorf("hdfs uploader: %w", spi.ErrClosed)
	}
	uri, err := u.upload(ctx, pkg)
	if err != nil {
		return "", fmt.Errorf("hdfs upload of %s to hdfs://%s%s: %w", pkg.Path, u.s.NameNodes[0], u.s.Directory, err)
	}
	return uri, nil
}

func (u *Uploader) upload(ctx context.Context, pkg spi.Package) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	want, _, err := pkgio.PreparePackage(ctx, pkg)
	if err != nil {
		return "", err
	}
	name, err := pkgio.ObjectName(pkg, want)
	if err != nil {
		return "", err
	}
	src, err := os.Open(pkg.Path)
	if err != nil {
		return "", fmt.Errorf("package file: %w", err)
	}
	defer src.Close()

	c, err := u.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.MkdirAll(u.s.Directory, u.s.DirPerm); err != nil {
		return "", hdfsx.Explain(err, u.user, "create directory "+u.s.Directory)
	}
	replication := u.s.Replication
	var blockSize int64
	defaults, err := c.ServerDefaults()
	if err != nil {
		return "", fmt.Errorf("read the NameNode's defaults: %w", err)
	}
	if replication == 0 {
		replication = defaults.Replication
	}
	blockSize = defaults.BlockSize

	tmp := path.Join(u.s.Directory, pkgio.TempPrefix+randomHex())
	w, err := c.CreateFile(tmp, replication, blockSize, u.s.FilePerm)
	if err != nil {
		return "", hdfsx.Explain(err, u.user, "write in "+u.s.Directory)
	}
	committed := false
	defer func() {
		if !committed {
			_ = w.Close()
			if rerr := c.Remove(tmp); rerr != nil && !hdfsx.IsNotExist(rerr) {
				u.log.Warn("could not remove the temporary file", zap.String("path", tmp), zap.Error(rerr))
			}
		}
	}()
	hw := pkgio.NewHashWriter(w)
	if _, err := pkgio.CopyContext(ctx, hw, src, 0); err != nil {
		return "", fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := hdfsx.CloseReplicated(ctx, w, u.s.Timeout); err != nil {
		return "", fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := pkgio.CheckSHA256(want, hw.SHA256()); err != nil {
		return "", fmt.Errorf("written file does not match Package.SHA256 (the file changed while it was uploaded): %w", err)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	dst := path.Join(u.s.Directory, name)
	if err := c.Rename(tmp, dst); err != nil {
		return "", hdfsx.Explain(err, u.user, "rename in "+u.s.Directory)
	}
	committed = true
	uri := u.uri(name)
	u.log.Info("uploaded package", zap.String("topology", pkg.Topology), zap.String("uri", uri),
		zap.Int64("bytes", hw.Size()), zap.String("sha256", want), zap.Int("replication", replication))
	return uri, nil
}

// PreviewURI returns the URI Upload would return for pkg, without
// contacting HDFS (for dry runs): the package file is read and hashed.
func (u *Uploader) PreviewURI(ctx context.Context, pkg spi.Package) (string, error) {
	sha, _, err := pkgio.PreparePackage(ctx, pkg)
	if err != nil {
		return "", fmt.Errorf("hdfs preview of %s: %w", pkg.Path, err)
	}
	name, err := pkgio.ObjectName(pkg, sha)
	if err != nil {
		return "", fmt.Errorf("hdfs preview of %s: %w", pkg.Path, err)
	}
	return u.uri(name), nil
}

func (u *Uploader) uri(name string) string {
	return hdfsx.Location{NameNode: u.s.NameNodes[0], Path: path.Join(u.s.Directory, name)}.String()
}

// Undo removes the package uri names, then the directory if it is empty.
// A missing package succeeds; a URI outside the configured NameNode and
// directory is refused rather than deleted.
func (u *Uploader) Undo(ctx context.Context, uri string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("hdfs undo %s: %w", uri, err)
	}
	p, err := u.pathOf(uri)
	if err != nil {
		return fmt.Errorf("hdfs undo %s: %w", uri, err)
	}
	c, err := u.dial(ctx)
	if err != nil {
		return fmt.Errorf("hdfs undo %s: %w", uri, err)
	}
	defer c.Close()
	switch err := c.Remove(p); {
	case err == nil:
		u.log.Info("removed package", zap.String("uri", uri))
	case hdfsx.IsNotExist(err):
		u.log.Debug("package already absent", zap.String("uri", uri))
	default:
		return fmt.Errorf("hdfs undo %s: %w", uri, hdfsx.Explain(err, u.user, "delete in "+u.s.Directory))
	}
	if err := c.Remove(u.s.Directory); err != nil && !hdfsx.IsNotExist(err) && !hdfsx.IsNotEmpty(err) {
		u.log.Warn("could not remove the empty package directory", zap.String("dir", u.s.Directory), zap.Error(err))
	}
	return nil
}

// pathOf maps an hdfs:// URI to a package directly inside the directory.
func (u *Uploader) pathOf(uri string) (string, error) {
	loc, err := hdfsx.ParseURI(uri)
	if err != nil {
		return "", fmt.Errorf("%w; the hdfs uploader cannot have produced it", err)
	}
	if !slices.Contains(u.s.NameNodes, loc.NameNode) {
		return "", fmt.Errorf("NameNode %s is not the configured %s; refusing to delete (was %s changed since the upload?)", loc.NameNode, strings.Join(u.s.NameNodes, ","), KeyNameNode)
	}
	if path.Dir(loc.Path) != u.s.Directory {
		return "", fmt.Errorf("%s is not in the package directory %s; refusing to delete it (was %s changed since the upload?)", loc.Path, u.s.Directory, KeyDirectory)
	}
	if err := pkgio.ValidName(path.Base(loc.Path)); err != nil {
		return "", fmt.Errorf("refusing to delete: %w", err)
	}
	return loc.Path, nil
}

// Check connects to the NameNode and reads its defaults.
func (u *Uploader) Check(ctx context.Context) error {
	c, err := u.dial(ctx)
	if err != nil {
		return fmt.Errorf("hdfs uploader: %w", err)
	}
	defer c.Close()
	if _, err := c.ServerDefaults(); err != nil {
		return fmt.Errorf("hdfs uploader: NameNode %s: %w", strings.Join(u.s.NameNodes, ","), err)
	}
	return nil
}

// Close marks the uploader closed; connections live only within a call.
func (u *Uploader) Close() error {
	u.closed.Store(true)
	return nil
}

func (u *Uploader) dial(ctx context.Context) (*hdfsclient.Client, error) {
	return hdfsx.Client{NameNodes: u.s.NameNodes, Timeout: u.s.Timeout, NameNodeKey: KeyNameNode}.Dial(ctx, u.user)
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
