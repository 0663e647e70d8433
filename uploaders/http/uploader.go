package http

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/httpx"
	"github.com/egret-stream/egret/internal/pkgio"
)

// Config keys of the http uploader.
const (
	KeyURI     = "egret.uploader.http.uri"
	KeyToken   = "egret.uploader.http.token"
	KeyTimeout = "egret.uploader.http.timeout"
	KeyRetries = "egret.uploader.http.retries"
)

// Defaults.
const (
	DefaultTimeout = 60 * time.Second
	DefaultRetries = 3
	defaultBackoff = 250 * time.Millisecond
)

// ShaHeader carries a package's hex SHA-256 in requests and responses.
const ShaHeader = httpx.ShaHeader

func init() { spi.RegisterUploader("http", New, configKeys...) }

// Uploader PUTs packages to a package server.
type Uploader struct {
	base    *url.URL
	token   string
	timeout time.Duration
	retry   httpx.Retry
	client  *nethttp.Client
	log     *zap.Logger
	closed  atomic.Bool
}

var (
	_ spi.Uploader     = (*Uploader)(nil)
	_ spi.URIPreviewer = (*Uploader)(nil)
)

// New builds an http uploader from cfg (see the package documentation for
// the keys).
func New(cfg spi.Config, log *zap.Logger) (spi.Uploader, error) {
	raw := cfg.String(KeyURI, "")
	if raw == "" {
		return nil, fmt.Errorf("http uploader: config key %s is required (the package server's base URL, e.g. http://host:7780/packages/)", KeyURI)
	}
	base, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("http uploader: config key %s: %w", KeyURI, err)
	}
	if base.Scheme != "http" && base.Scheme != "https" || base.Host == "" {
		return nil, fmt.Errorf("http uploader: config key %s = %q must be an http:// or https:// URL with a host", KeyURI, raw)
	}
	if base.RawQuery != "" || base.Fragment != "" {
		return nil, fmt.Errorf("http uploader: config key %s = %q must not have a query or fragment", KeyURI, raw)
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
		base.RawPath = ""
	}
	timeout, err := cfg.Duration(KeyTimeout, DefaultTimeout)
	if err != nil {
		return nil, fmt.Errorf("http uploader: %w", err)
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("http uploader: config key %s: %s must be positive", KeyTimeout, timeout)
	}
	retries, err := cfg.Int(KeyRetries, DefaultRetries)
	if err != nil {
		return nil, fmt.Errorf("http uploader: %w", err)
	}
	if retries < 0 {
		return nil, fmt.Errorf("http uploader: config key %s: %d must not be negative", KeyRetries, retries)
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Uploader{
		base:    base,
		token:   cfg.String(KeyToken, ""),
		timeout: timeout,
		retry:   httpx.Retry{Attempts: retries + 1, Backoff: defaultBackoff},
		client:  httpx.NewClient(timeout),
		log:     log.With(zap.String("uploader", "http")),
	}, nil
}

// putResponse is the JSON body the package server answers a PUT with.
type putResponse struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Upload hashes pkg.Path (checking it against pkg.SHA256 when given), then
// PUTs it with the digest in X-Egret-Sha256, retrying while the connection
// is refused.
func (u *Uploader) Upload(ctx context.Context, pkg spi.Package) (string, error) {
	if u.closed.Load() {
		return "", fmt.Errorf("http uploader: %w", spi.ErrClosed)
	}
	target, sha, size, err := u.target(ctx, pkg)
	if err != nil {
		return "", fmt.Errorf("http upload: %w", err)
	}
	resp, err := httpx.Do(ctx, u.client, u.retry, u.log, func(ctx context.Context) (*nethttp.Request, error) {
		f, err := os.Open(pkg.Path)
		if err != nil {
			return nil, fmt.Errorf("http upload: package file: %w", err)
		}
		req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodPut, target.String(), f)
		if err != nil {
			f.Close()
			return nil, err
		}
		req.ContentLength = size
		req.GetBody = func() (io.ReadCloser, error) { return os.Open(pkg.Path) }
		req.Header.Set("Content-Type", "application/gzip")
		req.Header.Set(ShaHeader, sha)
		httpx.SetToken(req, u.token)
		return req, nil
	})
	if err != nil {
		return "", fmt.Errorf("http upload of %s: %w", pkg.Path, httpx.Explain(ctx, err, u.timeout, KeyTimeout))
	}
	defer resp.Body.Close()
	if resp.StatusCode != nethttp.StatusOK && resp.StatusCode != nethttp.StatusCreated && resp.StatusCode != nethttp.StatusNoContent {
		return "", fmt.Errorf("http upload of %s: %w", pkg.Path, httpx.NewStatusError(resp))
	}
	if got := resp.Header.Get(ShaHeader); got != "" && !strings.EqualFold(got, sha) {
		return "", fmt.Errorf("http upload of %s to %s: server stored sha256 %s, sent %s: %w", pkg.Path, httpx.Redact(target), got, sha, pkgio.ErrChecksumMismatch)
	}
	var body putResponse
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body) // informational only
	}
	uri := target
	if loc := resp.Header.Get("Location"); loc != "" {
		l, err := target.Parse(loc)
		if err != nil || (l.Scheme != "http" && l.Scheme != "https") {
			return "", fmt.Errorf("http upload to %s: server answered with an unusable Location %q", httpx.Redact(target), loc)
		}
		uri = l
	}
	u.log.Info("uploaded package", zap.String("topology", pkg.Topology), zap.String("uri", httpx.Redact(uri)),
		zap.Int64("bytes", size), zap.String("sha256", sha))
	return uri.String(), nil
}

// target checks pkg and returns the URL it is PUT to, its digest and size.
func (u *Uploader) target(ctx context.Context, pkg spi.Package) (*url.URL, string, int64, error) {
	sha, size, err := pkgio.PreparePackage(ctx, pkg)
	if err != nil {
		return nil, "", 0, err
	}
	name, err := pkgio.ObjectName(pkg, sha)
	if err != nil {
		return nil, "", 0, err
	}
	return u.base.JoinPath(name), sha, size, nil
}

// PreviewURI returns the URI Upload would PUT pkg to, which is the URI it
// returns unless the package server answers with a Location elsewhere
// (egret serve-packages does not). It contacts no server.
func (u *Uploader) PreviewURI(ctx context.Context, pkg spi.Package) (string, error) {
	target, _, _, err := u.target(ctx, pkg)
	if err != nil {
		return "", fmt.Errorf("http preview: %w", err)
	}
	return target.String(), nil
}

// Undo DELETEs uri; a 404 is success. URIs that are not under the
// configured base URL are refused, so the token is never sent elsewhere.
func (u *Uploader) Undo(ctx context.Context, uri string) error {
	target, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf("http undo %s: %w", uri, err)
	}
	if !u.owns(target) {
		return fmt.Errorf("http undo %s: not under %s (%s); the http uploader cannot have produced it", uri, httpx.Redact(u.base), KeyURI)
	}
	resp, err := httpx.Do(ctx, u.client, u.retry, u.log, func(ctx context.Context) (*nethttp.Request, error) {
		req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodDelete, target.String(), nil)
		if err != nil {
			return nil, err
		}
		httpx.SetToken(req, u.token)
		return req, nil
	})
	if err != nil {
		return fmt.Errorf("http undo: %w", httpx.Explain(ctx, err, u.timeout, KeyTimeout))
	}
	switch resp.StatusCode {
	case nethttp.StatusOK, nethttp.StatusNoContent, nethttp.StatusAccepted:
		resp.Body.Close()
		u.log.Info("removed package", zap.String("uri", httpx.Redact(target)))
		return nil
	case nethttp.StatusNotFound, nethttp.StatusGone:
		resp.Body.Close()
		return nil
	default:
		return fmt.Errorf("http undo: %w", httpx.NewStatusError(resp))
	}
}

func (u *Uploader) owns(t *url.URL) bool {
	return strings.EqualFold(t.Scheme, u.base.Scheme) && strings.EqualFold(t.Host, u.base.Host) &&
		strings.HasPrefix(t.Path, u.base.Path) && len(t.Path) > len(u.base.Path)
}

// Close closes idle connections; later uploads fail with spi.ErrClosed.
func (u *Uploader) Close() error {
	if u.closed.Swap(true) {
		return nil
	}
	u.client.CloseIdleConnections()
	return nil
}
