// Package httpx holds the HTTP client plumbing shared by the http uploader
// and the fetch side: a client whose connections time out when no progress
// is made, retries on connection refused with exponential backoff, and
// errors that name the method, URL, status and the server's message.
package httpx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
)

// ShaHeader carries the hex SHA-256 of a package body, in both directions.
const ShaHeader = "X-Egret-Sha256"

// NewClient returns a client whose connections fail when a connect, a read
// or a write makes no progress for idle (the overall duration is left to
// the context, so large packages are not cut off). Keep-alives are off:
// uploads and fetches are rare and one connection per request keeps the
// idle-timeout semantics simple.
func NewClient(idle time.Duration) *http.Client {
	d := &net.Dialer{Timeout: idle, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &idleConn{Conn: c, idle: idle}, nil
		},
		TLSHandshakeTimeout:   idle,
		ResponseHeaderTimeout: idle,
		DisableKeepAlives:     true,
		ForceAttemptHTTP2:     false,
	}
	return &http.Client{Transport: tr}
}

// idleConn pushes the connection's deadline forward whenever a read or a
// write starts or makes progress; a pending read is extended by progress of
// writes too, so waiting for a response while the body uploads is fine.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) touch() { c.Conn.SetDeadline(time.Now().Add(c.idle)) }

func (c *idleConn) Read(b []byte) (int, error) {
	c.touch()
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.touch()
	}
	return n, err
}

func (c *idleConn) Write(b []byte) (int, error) {
	c.touch()
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.touch()
	}
	return n, err
}

// Retry says how often a request refused at connect time is tried again.
type Retry struct {
	// Attempts is the total number of tries (at least 1).
	Attempts int
	// Backoff is the wait before the second try; it doubles after each.
	Backoff time.Duration
	// OnRetry, when set, is called before each wait (for tests and logs).
	OnRetry func(attempt int, err error)
}

// Do sends the request built by build, retrying while the connection is
// refused (the server may be starting). build is called once per try so
// bodies can be reopened. Only connection refused is retried: once a
// connection is made the request may have had effects.
func Do(ctx context.Context, c *http.Client, r Retry, log *zap.Logger, build func(context.Context) (*http.Request, error)) (*http.Response, error) {
	attempts := max(r.Attempts, 1)
	wait := r.Backoff
	for attempt := 1; ; attempt++ {
		req, err := build(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := c.Do(req)
		if err == nil {
			return resp, nil
		}
		if !IsConnRefused(err) || attempt >= attempts || ctx.Err() != nil {
			if IsConnRefused(err) && attempts > 1 {
				return nil, fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
			}
			return nil, err
		}
		if r.OnRetry != nil {
			r.OnRetry(attempt, err)
		}
		log.Info("connection refused, retrying", zap.String("method", req.Method),
			zap.String("url", Redact(req.URL)), zap.Int("attempt", attempt), zap.Duration("backoff", wait))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%s %s: %w (while waiting to retry after: %v)", req.Method, Redact(req.URL), ctx.Err(), err)
		case <-t.C:
		}
		wait *= 2
	}
}

// IsConnRefused reports whether err is a refused TCP connection.
func IsConnRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// Explain adds a hint to transport errors: a timeout that is not the
// context's own names the config key that sets it.
func Explain(ctx context.Context, err error, idle time.Duration, key string) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
		return fmt.Errorf("%w (no progress for %s; raise %s if the server or network is slow)", err, idle, key)
	}
	return err
}

// Redact returns u as a string with any password hidden.
func Redact(u *url.URL) string { return u.Redacted() }

// StatusError is an unexpected HTTP answer. A 404 unwraps to
// spi.ErrNotFound.
type StatusError struct {
	Method  string
	URL     string
	Code    int
	Status  string
	Message string
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("%s %s: server answered %s", e.Method, e.URL, e.Status)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden {
		s += " (check the bearer token, egret.uploader.http.token)"
	}
	return s
}

// Unwrap maps 404 to spi.ErrNotFound.
func (e *StatusError) Unwrap() error {
	if e.Code == http.StatusNotFound || e.Code == http.StatusGone {
		return spi.ErrNotFound
	}
	return nil
}

// NewStatusError reads up to 4 KiB of resp's body as the server's message
// and closes the body.
func NewStatusError(resp *http.Response) *StatusError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	msg := strings.TrimSpace(string(b))
	if !utf8.ValidString(msg) {
		msg = strings.ToValidUTF8(msg, "?")
	}
	status := resp.Status
	if status == "" {
		status = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return &StatusError{
		Method:  resp.Request.Method,
		URL:     Redact(resp.Request.URL),
		Code:    resp.StatusCode,
		Status:  status,
		Message: msg,
	}
}

// SetToken adds a bearer token to req when token is not empty.
func SetToken(req *http.Request, token string) {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
}
