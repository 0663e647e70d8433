package http_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/fetch"
	egrethttp "github.com/egret-stream/egret/uploaders/http"
	"github.com/egret-stream/egret/uploaders/uploadertest"
)

func newUploader(t *testing.T, cfg spi.Config) spi.Uploader {
	t.Helper()
	u, err := egrethttp.New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func startServer(t *testing.T, opts ...egrethttp.ServerOption) (*httptest.Server, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	srv := httptest.NewServer(egrethttp.NewServer(dir, zaptest.NewLogger(t), opts...))
	t.Cleanup(srv.Close)
	return srv, dir
}

func TestConformance(t *testing.T) {
	srv, _ := startServer(t)
	uploadertest.Run(t, func(t *testing.T) spi.Uploader {
		return newUploader(t, spi.Config{egrethttp.KeyURI: srv.URL + "/packages/"})
	})
}

func TestConformanceWithToken(t *testing.T) {
	srv, _ := startServer(t, egrethttp.WithToken("s3cret"))
	uploadertest.Suite{
		New: func(t *testing.T) spi.Uploader {
			return newUploader(t, spi.Config{egrethttp.KeyURI: srv.URL + "/packages/", egrethttp.KeyToken: "s3cret"})
		},
		Fetch: fetch.Options{Token: "s3cret"},
	}.Run(t)
}

func TestRegistered(t *testing.T) {
	f, err := spi.LookupUploader("http")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f(spi.Config{egrethttp.KeyURI: "http://localhost:7780/packages/"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  spi.Config
		want string
	}{
		{"MissingURI", spi.Config{}, egrethttp.KeyURI},
		{"Scheme", spi.Config{egrethttp.KeyURI: "ftp://h/p/"}, "http:// or https://"},
		{"NoHost", spi.Config{egrethttp.KeyURI: "http:///p/"}, "host"},
		{"Query", spi.Config{egrethttp.KeyURI: "http://h/p/?x=1"}, "query"},
		{"Timeout", spi.Config{egrethttp.KeyURI: "http://h/p/", egrethttp.KeyTimeout: "soon"}, egrethttp.KeyTimeout},
		{"NegativeTimeout", spi.Config{egrethttp.KeyURI: "http://h/p/", egrethttp.KeyTimeout: "-1s"}, "positive"},
		{"Retries", spi.Config{egrethttp.KeyURI: "http://h/p/", egrethttp.KeyRetries: "-2"}, egrethttp.KeyRetries},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := egrethttp.New(tc.cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

func makePkg(t *testing.T, topology, content string) spi.Package {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "bin")
	if err := os.WriteFile(src, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pkg.tar.gz")
	sha, err := fetch.CreateTarGz(out, map[string]string{"topology": src})
	if err != nil {
		t.Fatal(err)
	}
	return spi.Package{Topology: topology, Role: "alice", Cluster: "c", Path: out, SHA256: sha}
}

func TestUploadBehindPrefixFollowsLocation(t *testing.T) {
	dir := t.TempDir()
	mux := http.NewServeMux()
	mux.Handle("/egret/", http.StripPrefix("/egret", egrethttp.NewServer(dir, zaptest.NewLogger(t))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u := newUploader(t, spi.Config{egrethttp.KeyURI: srv.URL + "/egret/packages"}) // no trailing slash
	pkg := makePkg(t, "wc", "bin")
	uri, err := u.Upload(context.Background(), pkg)
	if err != nil {
		t.Fatal(err)
	}
	want := srv.URL + "/egret/packages/wc-alice-" + pkg.SHA256[:12] + ".tar.gz"
	if uri != want {
		t.Fatalf("URI %s; want %s", uri, want)
	}
	if err := fetch.Fetch(context.Background(), uri, filepath.Join(t.TempDir(), "p"), pkg.SHA256, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "wc-alice-"+pkg.SHA256[:12]+".tar.gz")); err != nil {
		t.Fatal(err)
	}
}

func TestUploadErrorsNameURLStatusAndMessage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		code    int
		msg     string
		want    []string
		undoErr bool
	}{
		{"ServerError", 500, "disk full", []string{"500", "disk full"}, true},
		{"Unauthorized", 401, "missing or wrong bearer token", []string{"401", "bearer token", egrethttp.KeyToken}, true},
		{"TooLarge", 413, "package is larger than the server's limit", []string{"413", "limit"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				http.Error(w, tc.msg, tc.code)
			}))
			t.Cleanup(srv.Close)
			u := newUploader(t, spi.Config{egrethttp.KeyURI: srv.URL + "/packages/"})
			pkg := makePkg(t, "wc", "bin")
			_, err := u.Upload(context.Background(), pkg)
			if err == nil {
				t.Fatal("Upload succeeded")
			}
			for _, w := range append(tc.want, srv.URL+"/packages/wc-alice-") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			uerr := u.Undo(context.Background(), srv.URL+"/packages/x.tar.gz")
			if (uerr != nil) != tc.undoErr || (uerr != nil && !strings.Contains(uerr.Error(), tc.msg)) {
				t.Errorf("Undo = %v", uerr)
			}
		})
	}
}

func TestUndoRefusesForeignURIs(t *testing.T) {
	hits := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- r.URL.Path
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	u := newUploader(t, spi.Config{egrethttp.KeyURI: srv.URL + "/packages/", egrethttp.KeyToken: "tok"})
	for _, uri := range []string{
		"http://elsewhere.example/packages/x.tar.gz",
		srv.URL + "/other/x.tar.gz",
		srv.URL + "/packages/",
		"file:///tmp/x.tar.gz",
		"%zz",
	} {
		if err := u.Undo(context.Background(), uri); err == nil {
			t.Errorf("Undo(%s) succeeded; want a refusal", uri)
		}
	}
	if err := u.Undo(context.Background(), srv.URL+"/packages/x.tar.gz"); err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 {
		t.Fatalf("server saw %d requests; want 1", len(hits))
	}
}

func TestUploadRetriesConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	u := newUploader(t, spi.Config{egrethttp.KeyURI: "http://" + addr + "/packages/", egrethttp.KeyRetries: "3"})
	retries := 0
	egrethttp.SetRetryHook(u, time.Millisecond, func(attempt int, _ error) {
		retries++
		if attempt != 2 {
			return
		}
		// The server comes up while the uploader waits to retry.
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("port %s taken meanwhile: %v", addr, err)
			return
		}
		srv := httptest.NewUnstartedServer(egrethttp.NewServer(t.TempDir(), zaptest.NewLogger(t)))
		srv.Listener.Close()
		srv.Listener = l
		srv.Start()
		t.Cleanup(srv.Close)
	})
	pkg := makePkg(t, "wc", "bin")
	uri, err := u.Upload(context.Background(), pkg)
	if err != nil {
		t.Fatalf("Upload: %v", err)
	}
	if retries != 2 {
		t.Errorf("retried %d times; want 2", retries)
	}
	if err := fetch.Fetch(context.Background(), uri, filepath.Join(t.TempDir(), "p"), pkg.SHA256, nil); err != nil {
		t.Fatal(err)
	}
}

func TestUploadGivesUpOnConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	u := newUploader(t, spi.Config{egrethttp.KeyURI: "http://" + addr + "/packages/", egrethttp.KeyRetries: "2"})
	egrethttp.SetRetryHook(u, time.Millisecond, nil)
	_, err = u.Upload(context.Background(), makePkg(t, "wc", "bin"))
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "3 attempts") ||
		!strings.Contains(err.Error(), addr) {
		t.Fatalf("Upload = %v; want connection refused to %s after 3 attempts", err, addr)
	}
}

func TestUploadTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select { // never answer
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	u := newUploader(t, spi.Config{egrethttp.KeyURI: srv.URL + "/packages/", egrethttp.KeyTimeout: "200ms"})
	_, err := u.Upload(context.Background(), makePkg(t, "wc", "bin"))
	if err == nil || !strings.Contains(err.Error(), "timeout") || !strings.Contains(err.Error(), egrethttp.KeyTimeout) {
		t.Fatalf("Upload = %v; want a timeout naming %s", err, egrethttp.KeyTimeout)
	}
}

func TestUploadCanceledWhileWaiting(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		started <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	u := newUploader(t, spi.Config{egrethttp.KeyURI: srv.URL + "/packages/"})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := u.Upload(ctx, makePkg(t, "wc", "bin"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Upload = %v; want context.Canceled", err)
	}
}

func TestUploadDetectsServerDigestMismatch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set(egrethttp.ShaHeader, strings.Repeat("a", 64))
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	u := newUploader(t, spi.Config{egrethttp.KeyURI: srv.URL + "/packages/"})
	if _, err := u.Upload(context.Background(), makePkg(t, "wc", "bin")); err == nil || !strings.Contains(err.Error(), "sha256 mismatch") {
		t.Fatalf("Upload = %v; want a mismatch", err)
	}
}

func TestClosed(t *testing.T) {
	u := newUploader(t, spi.Config{egrethttp.KeyURI: "http://127.0.0.1:1/packages/"})
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Upload(context.Background(), makePkg(t, "wc", "x")); !errors.Is(err, spi.ErrClosed) {
		t.Fatalf("Upload after Close = %v; want spi.ErrClosed", err)
	}
}

// TestPreviewContactsNoServer: a preview names the URL an upload would PUT
// to without a request.
func TestPreviewContactsNoServer(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	u := newUploader(t, spi.Config{egrethttp.KeyURI: srv.URL + "/packages"})
	pkg := filepath.Join(t.TempDir(), "p.tar.gz")
	if err := os.WriteFile(pkg, []byte("package"), 0o644); err != nil {
		t.Fatal(err)
	}
	uri, err := u.(spi.URIPreviewer).PreviewURI(context.Background(), spi.Package{Topology: "wc", Role: "me", Cluster: "nomad", Path: pkg})
	if err != nil {
		t.Fatal(err)
	}
	if want := srv.URL + "/packages/wc-me-"; !strings.HasPrefix(uri, want) || !strings.HasSuffix(uri, ".tar.gz") {
		t.Errorf("PreviewURI = %s, want %s<digest>.tar.gz", uri, want)
	}
	srv.Close() // waits for any request in flight
	if requests != 0 {
		t.Errorf("PreviewURI sent %d requests", requests)
	}
}
