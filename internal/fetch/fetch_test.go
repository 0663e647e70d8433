package fetch_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/fetch"
)

const helloSHA = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" // sha256("hello")

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFetchLocal(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "pkg.tar.gz")
	writeFile(t, src, "hello")
	log := zaptest.NewLogger(t)
	for _, uri := range []string{src, "file://" + src, "file://localhost" + src} {
		dst := filepath.Join(t.TempDir(), "sub", "dst.tar.gz")
		if err := fetch.Fetch(context.Background(), uri, dst, helloSHA, log); err != nil {
			t.Fatalf("Fetch(%s): %v", uri, err)
		}
		if got, _ := os.ReadFile(dst); string(got) != "hello" {
			t.Fatalf("Fetch(%s) wrote %q", uri, got)
		}
	}
	// No digest given: copied as is.
	dst := filepath.Join(t.TempDir(), "dst")
	if err := fetch.Fetch(context.Background(), src, dst, "", log); err != nil {
		t.Fatal(err)
	}
}

func TestFetchErrors(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "pkg.tar.gz")
	writeFile(t, src, "hello")
	wrong := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name, uri, sha string
		is             error
		want           string
	}{
		{"Missing", filepath.Join(dir, "missing"), "", spi.ErrNotFound, "missing"},
		{"MissingFileURI", "file://" + filepath.Join(dir, "missing"), "", spi.ErrNotFound, "missing"},
		{"Mismatch", src, wrong, fetch.ErrChecksumMismatch, wrong},
		{"Scheme", "s3://bucket/pkg.tar.gz", "", spi.ErrUnsupported, "s3"},
		{"HDFSWithoutNameNode", "hdfs:///pkg.tar.gz", "", nil, "names no NameNode"},
		{"HDFSUnreachable", "hdfs://127.0.0.1:1/pkg.tar.gz", "", nil, "connect to HDFS NameNode 127.0.0.1:1"},
		{"Relative", "pkg.tar.gz", "", nil, "relative"},
		{"RemoteFile", "file://otherhost/pkg.tar.gz", "", nil, "otherhost"},
		{"BadSHA", src, "xyz", nil, "64 hex"},
		{"Empty", "", "", nil, "empty URI"},
		{"Directory", dir, "", nil, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dst")
			err := fetch.Fetch(context.Background(), tc.uri, dst, tc.sha, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Fetch(%s) = %v; want an error containing %q wrapping %v", tc.uri, err, tc.want, tc.is)
			}
			if _, err := os.Stat(dst); err == nil {
				t.Fatal("failed fetch left a file at dst")
			}
		})
	}
}

func TestFetchMismatchRemovesStaleDst(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "pkg")
	dst := filepath.Join(dir, "dst")
	writeFile(t, src, "new")
	writeFile(t, dst, "old")
	err := fetch.Fetch(context.Background(), src, dst, helloSHA, nil)
	if !errors.Is(err, fetch.ErrChecksumMismatch) {
		t.Fatalf("Fetch = %v; want ErrChecksumMismatch", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale dst still present: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
}

func TestFetchHTTP(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Egret-Sha256", helloSHA)
		w.Write([]byte("hello"))
	})
	mux.HandleFunc("/liar", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Egret-Sha256", helloSHA)
		w.Write([]byte("hellO"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, 4096))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	opts := fetch.Options{Token: "tok", Log: zaptest.NewLogger(t)}

	dst := filepath.Join(t.TempDir(), "dst")
	if err := fetch.FetchWith(ctx, srv.URL+"/ok", dst, helloSHA, opts); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "hello" {
		t.Fatalf("got %q", got)
	}

	for _, tc := range []struct {
		name, path string
		opts       fetch.Options
		is         error
		want       string
	}{
		{"NoToken", "/ok", fetch.Options{}, nil, "401"},
		{"NotFound", "/nope", opts, spi.ErrNotFound, "404"},
		{"ServerDigestMismatch", "/liar", opts, fetch.ErrChecksumMismatch, "sha256 mismatch"},
		{"TooLarge", "/big", fetch.Options{MaxBytes: 100}, fetch.ErrTooLarge, "more than 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dst")
			err := fetch.FetchWith(ctx, srv.URL+tc.path, dst, "", tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), srv.URL+tc.path) ||
				(tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("FetchWith = %v; want an error naming the URL, containing %q, wrapping %v", err, tc.want, tc.is)
			}
			if _, err := os.Stat(dst); err == nil {
				t.Fatal("failed fetch left a file at dst")
			}
		})
	}
}

func TestFetchHTTPRefusedGivesUp(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/pkg"
	srv.Close() // nothing listens any more
	err := fetch.FetchWith(context.Background(), url, filepath.Join(t.TempDir(), "dst"), "",
		fetch.Options{Attempts: 2, Backoff: 1})
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "2 attempts") {
		t.Fatalf("FetchWith = %v; want connection refused after 2 attempts", err)
	}
}

func TestOptionsFromConfig(t *testing.T) {
	o, err := fetch.OptionsFromConfig(spi.Config{fetch.KeyToken: "t", fetch.KeyTimeout: "5s"}, nil)
	if err != nil || o.Token != "t" || o.Timeout.Seconds() != 5 {
		t.Fatalf("OptionsFromConfig = %+v, %v", o, err)
	}
	if _, err := fetch.OptionsFromConfig(spi.Config{fetch.KeyTimeout: "soon"}, nil); err == nil {
		t.Fatal("bad timeout accepted")
	}
}
