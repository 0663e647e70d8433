package fetch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/hdfsx"
	"github.com/egret-stream/egret/internal/httpx"
	"github.com/egret-stream/egret/internal/pkgio"
)

// ErrChecksumMismatch is wrapped by Fetch when the downloaded bytes do not
// hash to the expected SHA-256.
var ErrChecksumMismatch = pkgio.ErrChecksumMismatch

// ErrTooLarge is wrapped when a download or an archive exceeds its limit.
var ErrTooLarge = pkgio.ErrTooLarge

// Config keys read by OptionsFromConfig; they are the http uploader's, so a
// container fetches with the same token and timeout the submitter used.
const (
	KeyToken   = "egret.uploader.http.token"
	KeyTimeout = "egret.uploader.http.timeout"
	// KeyHDFSUser is the hdfs uploader's user, with which containers read
	// hdfs:// packages.
	KeyHDFSUser = "egret.uploader.hdfs.user"
)

// Defaults of Options.
const (
	DefaultTimeout  = 60 * time.Second
	DefaultAttempts = 4
	DefaultBackoff  = 250 * time.Millisecond
	DefaultMaxBytes = 4 << 30
)

// Options tune FetchWith. The zero value is usable.
type Options struct {
	// Token, when set, is sent as "Authorization: Bearer <token>" on
	// http(s) requests.
	Token string
	// Timeout is how long a connection may make no progress (connect,
	// read, or wait for the response); default 60s. The overall duration
	// is bounded by the context only.
	Timeout time.Duration
	// Attempts is how often a refused connection is tried (default 4),
	// waiting Backoff (default 250ms, doubling) between tries.
	Attempts int
	Backoff  time.Duration
	// MaxBytes caps the download (default 4 GiB).
	MaxBytes int64
	// HDFSUser is the simple-auth user for hdfs:// URIs; empty:
	// $HADOOP_USER_NAME, else the user running the process.
	HDFSUser string
	// Client replaces the HTTP client (for custom TLS); Timeout then
	// only applies if the client sets it itself.
	Client *http.Client
	// Log receives progress; nil means no logging.
	Log *zap.Logger
}

// OptionsFromConfig reads the token and timeout from the cluster config.
func OptionsFromConfig(cfg spi.Config, log *zap.Logger) (Options, error) {
	d, err := cfg.Duration(KeyTimeout, DefaultTimeout)
	if err != nil {
		return Options{}, err
	}
	if d <= 0 {
		return Options{}, fmt.Errorf("config key %s: %s must be positive", KeyTimeout, d)
	}
	return Options{Token: cfg.String(KeyToken, ""), Timeout: d, HDFSUser: cfg.String(KeyHDFSUser, ""), Log: log}, nil
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Client == nil {
		o.Client = httpx.NewClient(o.Timeout)
	}
	return o
}

// Fetch downloads uri to the file dst with default Options. See FetchWith.
func Fetch(ctx context.Context, uri, dst string, sha256hex string, log *zap.Logger) error {
	return FetchWith(ctx, uri, dst, sha256hex, Options{Log: log})
}

// FetchWith downloads uri to the file dst. Supported: file:// URIs and plain
// absolute paths (copied), http:// and https:// (GET), hdfs:// (read from
// the NameNode and DataNodes as Options.HDFSUser). The file appears at
// dst complete or not at all (temp file + rename in dst's directory, which
// is created if needed). When sha256hex is given, or else when an http
// server sends X-Egret-Sha256, the bytes must match it: on a mismatch the
// error wraps ErrChecksumMismatch and no file is left at dst (an older file
// there is removed too, so a stale package is never used by mistake). A
// package that does not exist gives an error wrapping spi.ErrNotFound.
func FetchWith(ctx context.Context, uri, dst string, sha256hex string, opts Options) error {
	opts = opts.withDefaults()
	want, err := pkgio.NormalizeSHA256(sha256hex)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", uri, err)
	}
	if dst == "" {
		return fmt.Errorf("fetch %s: empty destination path", uri)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("fetch %s: create destination directory: %w", uri, err)
	}
	src, u, err := parseURI(uri)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", uri, err)
	}
	var sha string
	var n int64
	switch {
	case u == nil:
		sha, n, err = fetchFile(ctx, src, dst, want, opts)
	case u.Scheme == hdfsx.Scheme:
		sha, n, err = fetchHDFS(ctx, uri, dst, want, opts)
	default:
		sha, n, err = fetchHTTP(ctx, u, dst, want, opts)
	}
	if err != nil {
		if errors.Is(err, pkgio.ErrChecksumMismatch) {
			if rerr := os.Remove(dst); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				opts.Log.Warn("cannot remove stale package after checksum mismatch", zap.String("dst", dst), zap.Error(rerr))
			}
		}
		return fmt.Errorf("fetch %s: %w", uri, err)
	}
	opts.Log.Info("fetched package", zap.String("uri", uri), zap.String("dst", dst),
		zap.Int64("bytes", n), zap.String("sha256", sha))
	return nil
}

// parseURI returns a local path, or an http(s) or hdfs URL.
func parseURI(uri string) (string, *url.URL, error) {
	if uri == "" {
		return "", nil, errors.New("empty URI")
	}
	if filepath.IsAbs(uri) {
		return filepath.Clean(uri), nil, nil
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "", nil, fmt.Errorf("not a URI or absolute path: %w", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return "", nil, fmt.Errorf("file URI names host %q; only local files (file:///path) can be fetched", u.Host)
		}
		if u.Path == "" || !filepath.IsAbs(u.Path) {
			return "", nil, errors.New("file URI has no absolute path (want file:///abs/path)")
		}
		return filepath.Clean(u.Path), nil, nil
	case "http", "https":
		if u.Host == "" {
			return "", nil, errors.New("URL has no host")
		}
		return "", u, nil
	case hdfsx.Scheme:
		if _, err := hdfsx.ParseURI(uri); err != nil {
			return "", nil, err
		}
		u.Scheme = hdfsx.Scheme
		return "", u, nil
	case "":
		return "", nil, errors.New("relative path; give an absolute path or a file://, http://, https:// or hdfs:// URI")
	default:
		return "", nil, fmt.Errorf("scheme %q: %w (supported: file, http, https, hdfs)", u.Scheme, spi.ErrUnsupported)
	}
}

func fetchFile(ctx context.Context, src, dst, want string, opts Options) (string, int64, error) {
	f, err := os.Open(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", 0, fmt.Errorf("package file %s: %w (%w)", src, spi.ErrNotFound, err)
		}
		return "", 0, fmt.Errorf("open package file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, fmt.Errorf("stat package file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", 0, fmt.Errorf("package %s is not a regular file (mode %s)", src, fi.Mode())
	}
	if fi.Size() > opts.MaxBytes {
		return "", 0, fmt.Errorf("package %s has %d bytes, more than %d: %w", src, fi.Size(), opts.MaxBytes, pkgio.ErrTooLarge)
	}
	return pkgio.WriteFile(ctx, dst, f, want, opts.MaxBytes, 0o644)
}

func fetchHDFS(ctx context.Context, uri, dst, want string, opts Options) (string, int64, error) {
	loc, err := hdfsx.ParseURI(uri)
	if err != nil {
		return "", 0, err
	}
	user, err := hdfsx.User(opts.HDFSUser)
	if err != nil {
		return "", 0, err
	}
	c, err := hdfsx.Dial(ctx, []string{loc.NameNode}, user, opts.Timeout)
	if err != nil {
		return "", 0, err
	}
	defer c.Close()
	f, err := c.Open(loc.Path)
	if err != nil {
		return "", 0, hdfsx.Explain(err, user, "read "+loc.Path)
	}
	defer f.Close()
	if fi := f.Stat(); fi.IsDir() {
		return "", 0, fmt.Errorf("package %s is a directory", loc.Path)
	} else if fi.Size() > opts.MaxBytes {
		return "", 0, fmt.Errorf("package %s has %d bytes, more than %d: %w", loc.Path, fi.Size(), opts.MaxBytes, pkgio.ErrTooLarge)
	}
	return pkgio.WriteFile(ctx, dst, f, want, opts.MaxBytes, 0o644)
}

func fetchHTTP(ctx context.Context, u *url.URL, dst, want string, opts Options) (string, int64, error) {
	retry := httpx.Retry{Attempts: opts.Attempts, Backoff: opts.Backoff}
	resp, err := httpx.Do(ctx, opts.Client, retry, opts.Log, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, err
		}
		httpx.SetToken(req, opts.Token)
		return req, nil
	})
	if err != nil {
		return "", 0, httpx.Explain(ctx, err, opts.Timeout, KeyTimeout)
	}
	if resp.StatusCode != http.StatusOK {
		return "", 0, httpx.NewStatusError(resp)
	}
	defer resp.Body.Close()
	if resp.ContentLength > opts.MaxBytes {
		return "", 0, fmt.Errorf("server announces %d bytes, more than %d: %w", resp.ContentLength, opts.MaxBytes, pkgio.ErrTooLarge)
	}
	if want == "" {
		if h, err := pkgio.NormalizeSHA256(resp.Header.Get(httpx.ShaHeader)); err == nil {
			want = h
		}
	}
	sha, n, err := pkgio.WriteFile(ctx, dst, resp.Body, want, opts.MaxBytes, 0o644)
	if err != nil {
		return sha, n, httpx.Explain(ctx, err, opts.Timeout, KeyTimeout)
	}
	return sha, n, nil
}
