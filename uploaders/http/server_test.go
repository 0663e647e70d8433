package http_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	egrethttp "github.com/egret-stream/egret/uploaders/http"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// newHandler returns a server over parent/store, with a secret file next to
// the store that traversal attempts aim at.
func newHandler(t *testing.T, opts ...egrethttp.ServerOption) (h http.Handler, parent, store string) {
	t.Helper()
	parent = t.TempDir()
	store = filepath.Join(parent, "store")
	if err := os.WriteFile(filepath.Join(parent, "secret"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	return egrethttp.NewServer(store, zaptest.NewLogger(t), opts...), parent, store
}

func do(h http.Handler, method, target string, body []byte, hdr map[string]string) *httptest.ResponseRecorder {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// storeFiles lists the store, failing on anything but want.
func expectStore(t *testing.T, store string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(store)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("store holds %v; want %v", got, want)
	}
}

func TestServerRejectsBadNames(t *testing.T) {
	h, parent, store := newHandler(t)
	paths := []string{
		"/packages/..",
		"/packages/.",
		"/packages/../secret",
		"/packages/..%2Fsecret",
		"/packages/%2e%2e%2fsecret",
		"/packages/%2E%2E/secret",
		"/packages/a%2Fb",
		"/packages/sub/x.tar.gz",
		"/packages/.hidden",
		"/packages/.egret-tmp-123",
		"/packages/a%00b",
		"/packages/a%20b",
		"/packages/..%5Csecret",
		"/packages/%2Fetc%2Fpasswd",
		"/packages//etc/passwd",
		"/packages/",
		"/packages/" + strings.Repeat("a", 256),
		"/packages/caf%C3%A9",
	}
	for _, p := range paths {
		for _, m := range []string{"PUT", "POST", "GET", "HEAD", "DELETE"} {
			w := do(h, m, p, []byte("payload"), nil)
			if w.Code != http.StatusBadRequest {
				t.Errorf("%s %s: status %d; want 400", m, p, w.Code)
			}
			if m == "GET" && strings.Contains(w.Body.String(), "secret\n") && !strings.Contains(w.Body.String(), "package name") {
				t.Errorf("GET %s leaked the secret", p)
			}
		}
	}
	for _, p := range []string{"/", "/secret", "/store/x", "/packagesx"} {
		if w := do(h, "PUT", p, []byte("payload"), nil); w.Code != http.StatusNotFound {
			t.Errorf("PUT %s: status %d; want 404", p, w.Code)
		}
	}
	expectStore(t, store)
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 || entries[0].Name() != "secret" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("parent holds %v; want only secret", names)
	}
	if b, _ := os.ReadFile(filepath.Join(parent, "secret")); string(b) != "secret" {
		t.Fatal("secret changed")
	}
}

func TestServerStoreServeDelete(t *testing.T) {
	h, _, store := newHandler(t)
	body := []byte("package bytes")
	sha := digest(body)

	w := do(h, "PUT", "/packages/wc.tar.gz", body, map[string]string{egrethttp.ShaHeader: strings.ToUpper(sha)})
	if w.Code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", w.Code, w.Body)
	}
	if w.Header().Get("Location") != "wc.tar.gz" || w.Header().Get(egrethttp.ShaHeader) != sha {
		t.Fatalf("PUT headers %v", w.Header())
	}
	if !strings.Contains(w.Body.String(), `"sha256":"`+sha+`"`) {
		t.Fatalf("PUT body %s", w.Body)
	}

	w = do(h, "HEAD", "/packages/wc.tar.gz", nil, nil)
	if w.Code != 200 || w.Header().Get("Content-Length") != fmt.Sprint(len(body)) ||
		w.Header().Get(egrethttp.ShaHeader) != sha || w.Header().Get("ETag") != `"`+sha+`"` || w.Body.Len() != 0 {
		t.Fatalf("HEAD: %d %v %q", w.Code, w.Header(), w.Body)
	}
	w = do(h, "GET", "/packages/wc.tar.gz", nil, nil)
	if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), body) || w.Header().Get("Content-Type") != "application/gzip" {
		t.Fatalf("GET: %d %v %q", w.Code, w.Header(), w.Body)
	}
	if w = do(h, "GET", "/packages/wc.tar.gz", nil, map[string]string{"If-None-Match": `"` + sha + `"`}); w.Code != http.StatusNotModified {
		t.Fatalf("conditional GET: %d", w.Code)
	}
	if w = do(h, "GET", "/packages/wc.tar.gz", nil, map[string]string{"Range": "bytes=0-6"}); w.Code != http.StatusPartialContent || w.Body.String() != "package" {
		t.Fatalf("range GET: %d %q", w.Code, w.Body)
	}

	// A replacement without a digest header is accepted and re-hashed.
	body2 := []byte("new package bytes")
	if w = do(h, "PUT", "/packages/wc.tar.gz", body2, nil); w.Code != http.StatusCreated || w.Header().Get(egrethttp.ShaHeader) != digest(body2) {
		t.Fatalf("second PUT: %d %v", w.Code, w.Header())
	}
	if w = do(h, "GET", "/packages/wc.tar.gz", nil, nil); w.Body.String() != string(body2) || w.Header().Get(egrethttp.ShaHeader) != digest(body2) {
		t.Fatalf("GET after replace: %q %v", w.Body, w.Header())
	}

	if w = do(h, "PATCH", "/packages/wc.tar.gz", nil, nil); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") == "" {
		t.Fatalf("PATCH: %d %v", w.Code, w.Header())
	}
	if w = do(h, "DELETE", "/packages/wc.tar.gz", nil, nil); w.Code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", w.Code)
	}
	for _, m := range []string{"DELETE", "GET", "HEAD"} {
		if w = do(h, m, "/packages/wc.tar.gz", nil, nil); w.Code != http.StatusNotFound {
			t.Fatalf("%s after DELETE: %d", m, w.Code)
		}
	}
	expectStore(t, store)
}

func TestServerDigestChecks(t *testing.T) {
	h, _, store := newHandler(t)
	body := []byte("payload")
	w := do(h, "PUT", "/packages/a.tar.gz", body, map[string]string{egrethttp.ShaHeader: digest([]byte("other"))})
	if w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "sha256 mismatch") {
		t.Fatalf("mismatch: %d %s", w.Code, w.Body)
	}
	w = do(h, "PUT", "/packages/a.tar.gz", body, map[string]string{egrethttp.ShaHeader: "abc"})
	if w.Code != http.StatusBadRequest {
		t.Fatalf("malformed digest: %d %s", w.Code, w.Body)
	}
	expectStore(t, store) // no package, no temp file
}

func TestServerSizeCap(t *testing.T) {
	h, _, store := newHandler(t, egrethttp.WithMaxBytes(1000))
	big := bytes.Repeat([]byte("x"), 2000)
	if w := do(h, "PUT", "/packages/big.tar.gz", big, nil); w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("announced too large: %d", w.Code)
	}
	// Unknown length (chunked): the cap applies while reading.
	req := httptest.NewRequest("PUT", "/packages/big.tar.gz", io.MultiReader(bytes.NewReader(big)))
	req.ContentLength = -1
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "1000") {
		t.Fatalf("streamed too large: %d %s", w.Code, w.Body)
	}
	expectStore(t, store)
	if w := do(h, "PUT", "/packages/ok.tar.gz", big[:1000], nil); w.Code != http.StatusCreated {
		t.Fatalf("at the limit: %d %s", w.Code, w.Body)
	}
	expectStore(t, store, "ok.tar.gz")
}

func TestServerAuth(t *testing.T) {
	h, _, _ := newHandler(t, egrethttp.WithToken("s3cret"))
	body := []byte("payload")
	for _, tc := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusUnauthorized},
		{"Bearer s3cret2", http.StatusUnauthorized},
		{"Basic czNjcmV0", http.StatusUnauthorized},
		{"bearer s3cret", http.StatusUnauthorized},
		{"Bearer s3cret", http.StatusCreated},
	} {
		hdr := map[string]string{}
		if tc.auth != "" {
			hdr["Authorization"] = tc.auth
		}
		w := do(h, "PUT", "/packages/a.tar.gz", body, hdr)
		if w.Code != tc.want {
			t.Errorf("PUT with %q: %d; want %d", tc.auth, w.Code, tc.want)
		}
		if w.Code == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("401 without WWW-Authenticate")
		}
	}
	for _, m := range []string{"GET", "HEAD", "DELETE"} {
		if w := do(h, m, "/packages/a.tar.gz", nil, nil); w.Code != http.StatusUnauthorized {
			t.Errorf("%s without token: %d", m, w.Code)
		}
	}
	if w := do(h, "GET", "/packages/a.tar.gz", nil, map[string]string{"Authorization": "Bearer s3cret"}); w.Code != 200 {
		t.Errorf("GET with token: %d", w.Code)
	}
}

func TestServerMultipartPost(t *testing.T) {
	h, store := func() (http.Handler, string) { h, _, s := newHandler(t); return h, s }()
	body := []byte("multipart package")
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("note", "ignored")
	fw, _ := mw.CreateFormFile("file", "x.tar.gz")
	fw.Write(body)
	mw.Close()
	w := do(h, "POST", "/packages/mp.tar.gz", buf.Bytes(), map[string]string{
		"Content-Type": mw.FormDataContentType(), egrethttp.ShaHeader: digest(body)})
	if w.Code != http.StatusCreated {
		t.Fatalf("multipart POST: %d %s", w.Code, w.Body)
	}
	if got, _ := os.ReadFile(filepath.Join(store, "mp.tar.gz")); !bytes.Equal(got, body) {
		t.Fatalf("stored %q", got)
	}
	buf.Reset()
	mw = multipart.NewWriter(&buf)
	mw.WriteField("note", "no file")
	mw.Close()
	if w := do(h, "POST", "/packages/mp2.tar.gz", buf.Bytes(), map[string]string{"Content-Type": mw.FormDataContentType()}); w.Code != http.StatusBadRequest {
		t.Fatalf("multipart without file: %d", w.Code)
	}
	// A raw POST body works like PUT.
	if w := do(h, "POST", "/packages/raw.tar.gz", body, nil); w.Code != http.StatusCreated {
		t.Fatalf("raw POST: %d", w.Code)
	}
}

// TestServerConcurrentReplaceNeverServesHalf replaces a package over and
// over while reading it: every GET must return one whole version whose
// digest matches the X-Egret-Sha256 it came with.
func TestServerConcurrentReplaceNeverServesHalf(t *testing.T) {
	srv, _ := startServer(t)
	url := srv.URL + "/packages/hot.tar.gz"
	versions := [][]byte{bytes.Repeat([]byte("a"), 512<<10), bytes.Repeat([]byte("b"), 256<<10)}
	valid := map[string]bool{digest(versions[0]): true, digest(versions[1]): true}
	put := func(b []byte) error {
		req, _ := http.NewRequest("PUT", url, bytes.NewReader(b))
		req.Header.Set(egrethttp.ShaHeader, digest(b))
		resp, err := srv.Client().Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("PUT: %s", resp.Status)
		}
		return nil
	}
	if err := put(versions[0]); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	wg.Go(func() {
		for i := range 30 {
			if err := put(versions[i%2]); err != nil {
				errs <- err
				return
			}
		}
	})
	for range 3 {
		wg.Go(func() {
			for range 20 {
				resp, err := srv.Client().Get(url)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				got := digest(b)
				if !valid[got] || resp.Header.Get(egrethttp.ShaHeader) != got {
					errs <- fmt.Errorf("GET returned %d bytes with digest %s under header %s", len(b), got, resp.Header.Get(egrethttp.ShaHeader))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
