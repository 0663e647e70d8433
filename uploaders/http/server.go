package http

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	nethttp "net/http"
	"os"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/internal/pkgio"
	"github.com/egret-stream/egret/internal/safepath"
)

// PathPrefix is where the server serves packages: /packages/<name>.
const PathPrefix = "/packages/"

// DefaultMaxBytes caps an upload unless WithMaxBytes says otherwise.
const DefaultMaxBytes int64 = 2 << 30

// ServerOption configures NewServer.
type ServerOption func(*server)

// WithMaxBytes caps the size of an upload (n <= 0 keeps the default, 2 GiB).
func WithMaxBytes(n int64) ServerOption {
	return func(s *server) {
		if n > 0 {
			s.max = n
		}
	}
}

// WithToken makes every request carry "Authorization: Bearer <token>"; an
// empty token disables the check.
func WithToken(token string) ServerOption { return func(s *server) { s.token = token } }

type cached struct {
	fi  os.FileInfo
	sha string
}

type server struct {
	dir   string
	log   *zap.Logger
	max   int64
	token string

	mu   sync.Mutex
	shas map[string]cached // name -> digest of the file with that identity
}

// NewServer returns the package server for dir (created on first upload).
// It serves PathPrefix+<name>: PUT/POST store, GET/HEAD serve, DELETE
// removes; see the package documentation.
func NewServer(dir string, log *zap.Logger, opts ...ServerOption) nethttp.Handler {
	if log == nil {
		log = zap.NewNop()
	}
	s := &server{dir: dir, log: log.With(zap.String("component", "package-server")), max: DefaultMaxBytes, shas: map[string]cached{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *server) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	if s.token != "" && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="egret-packages"`)
		s.fail(w, r, nethttp.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	if !strings.HasPrefix(r.URL.Path, PathPrefix) {
		s.fail(w, r, nethttp.StatusNotFound, "packages are served under "+PathPrefix)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, PathPrefix)
	if err := pkgio.ValidName(name); err != nil {
		s.fail(w, r, nethttp.StatusBadRequest, err.Error())
		return
	}
	path, err := safepath.Join(s.dir, name)
	if err != nil {
		s.fail(w, r, nethttp.StatusBadRequest, err.Error())
		return
	}
	switch r.Method {
	case nethttp.MethodPut, nethttp.MethodPost:
		s.store(w, r, name, path)
	case nethttp.MethodGet, nethttp.MethodHead:
		s.serve(w, r, name, path)
	case nethttp.MethodDelete:
		s.remove(w, r, name, path)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT, POST, DELETE")
		s.fail(w, r, nethttp.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
	}
}

func (s *server) authorized(r *nethttp.Request) bool {
	got := r.Header.Get("Authorization")
	want := "Bearer " + s.token
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (s *server) fail(w nethttp.ResponseWriter, r *nethttp.Request, code int, msg string) {
	s.log.Warn("request rejected", zap.String("method", r.Method), zap.String("path", r.URL.Path),
		zap.String("remote", r.RemoteAddr), zap.Int("status", code), zap.String("reason", msg))
	nethttp.Error(w, msg, code)
}

func (s *server) store(w nethttp.ResponseWriter, r *nethttp.Request, name, path string) {
	if r.ContentLength > s.max {
		s.fail(w, r, nethttp.StatusRequestEntityTooLarge, fmt.Sprintf("package of %d bytes is larger than the server's limit of %d bytes", r.ContentLength, s.max))
		return
	}
	want, err := pkgio.NormalizeSHA256(r.Header.Get(ShaHeader))
	if err != nil {
		s.fail(w, r, nethttp.StatusBadRequest, ShaHeader+": "+err.Error())
		return
	}
	r.Body = nethttp.MaxBytesReader(w, r.Body, s.max)
	body, err := uploadBody(r)
	if err != nil {
		s.fail(w, r, nethttp.StatusBadRequest, err.Error())
		return
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		s.log.Error("cannot create package directory", zap.String("dir", s.dir), zap.Error(err))
		s.fail(w, r, nethttp.StatusInternalServerError, "cannot create the package directory")
		return
	}
	pw, err := pkgio.NewWriter(s.dir)
	if err != nil {
		s.log.Error("cannot create temp file", zap.Error(err))
		s.fail(w, r, nethttp.StatusInternalServerError, "cannot create a temporary file")
		return
	}
	defer pw.Abort()
	if _, err := pw.Copy(r.Context(), body, s.max); err != nil {
		var mbe *nethttp.MaxBytesError
		if errors.Is(err, pkgio.ErrTooLarge) || errors.As(err, &mbe) {
			s.fail(w, r, nethttp.StatusRequestEntityTooLarge, fmt.Sprintf("package is larger than the server's limit of %d bytes", s.max))
			return
		}
		s.fail(w, r, nethttp.StatusBadRequest, "reading the upload failed: "+err.Error())
		return
	}
	sha := pw.SHA256()
	if err := pkgio.CheckSHA256(want, sha); err != nil {
		s.fail(w, r, nethttp.StatusUnprocessableEntity, "received bytes do not match "+ShaHeader+": "+err.Error())
		return
	}
	fi, err := pw.Stat()
	if err != nil {
		s.fail(w, r, nethttp.StatusInternalServerError, "cannot stat the upload")
		return
	}
	if err := pw.Commit(path, 0o644); err != nil {
		s.log.Error("cannot store package", zap.String("name", name), zap.Error(err))
		s.fail(w, r, nethttp.StatusInternalServerError, "cannot store the package")
		return
	}
	s.remember(name, fi, sha)
	s.log.Info("stored package", zap.String("name", name), zap.Int64("bytes", pw.Size()),
		zap.String("sha256", sha), zap.String("remote", r.RemoteAddr))
	h := w.Header()
	h.Set("Location", name) // relative: resolves to the request URL, whatever the prefix in front
	h.Set(ShaHeader, sha)
	h.Set("ETag", `"`+sha+`"`)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(nethttp.StatusCreated)
	json.NewEncoder(w).Encode(putResponse{Name: name, SHA256: sha, Size: pw.Size()})
}

// uploadBody is the raw body, or the "file" part of a multipart POST.
func uploadBody(r *nethttp.Request) (io.Reader, error) {
	if r.Method != nethttp.MethodPost {
		return r.Body, nil
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return r.Body, nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, fmt.Errorf("bad multipart body: %w", err)
	}
	for {
		p, err := mr.NextPart()
		if err != nil {
			return nil, errors.New(`multipart body has no "file" part`)
		}
		if p.FormName() == "file" {
			return p, nil
		}
	}
}

func (s *server) serve(w nethttp.ResponseWriter, r *nethttp.Request, name, path string) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.fail(w, r, nethttp.StatusNotFound, fmt.Sprintf("no package %q", name))
			return
		}
		s.log.Error("cannot open package", zap.String("name", name), zap.Error(err))
		s.fail(w, r, nethttp.StatusInternalServerError, "cannot open the package")
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		s.fail(w, r, nethttp.StatusNotFound, fmt.Sprintf("no package %q", name))
		return
	}
	sha, err := s.digest(name, f, fi)
	if err != nil {
		s.log.Error("cannot hash package", zap.String("name", name), zap.Error(err))
		s.fail(w, r, nethttp.StatusInternalServerError, "cannot read the package")
		return
	}
	h := w.Header()
	h.Set(ShaHeader, sha)
	h.Set("ETag", `"`+sha+`"`)
	h.Set("Cache-Control", "no-cache")
	if strings.HasSuffix(name, ".gz") || strings.HasSuffix(name, ".tgz") {
		h.Set("Content-Type", "application/gzip")
	} else {
		h.Set("Content-Type", "application/octet-stream")
	}
	s.log.Debug("serving package", zap.String("name", name), zap.String("method", r.Method), zap.String("remote", r.RemoteAddr))
	nethttp.ServeContent(w, r, name, fi.ModTime(), f)
}

// digest returns the SHA-256 of the open file f, from the cache when it
// still describes the same file (renames replace the inode), else by
// reading f, which is then rewound.
func (s *server) digest(name string, f *os.File, fi os.FileInfo) (string, error) {
	s.mu.Lock()
	c, ok := s.shas[name]
	s.mu.Unlock()
	if ok && os.SameFile(c.fi, fi) && c.fi.Size() == fi.Size() && c.fi.ModTime().Equal(fi.ModTime()) {
		return c.sha, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	sha := hex.EncodeToString(h.Sum(nil))
	s.remember(name, fi, sha)
	return sha, nil
}

func (s *server) remember(name string, fi os.FileInfo, sha string) {
	s.mu.Lock()
	s.shas[name] = cached{fi: fi, sha: sha}
	s.mu.Unlock()
}

func (s *server) remove(w nethttp.ResponseWriter, r *nethttp.Request, name, path string) {
	err := os.Remove(path)
	s.mu.Lock()
	delete(s.shas, name)
	s.mu.Unlock()
	switch {
	case err == nil:
		s.log.Info("removed package", zap.String("name", name), zap.String("remote", r.RemoteAddr))
		w.WriteHeader(nethttp.StatusNoContent)
	case errors.Is(err, fs.ErrNotExist):
		s.fail(w, r, nethttp.StatusNotFound, fmt.Sprintf("no package %q", name))
	default:
		s.log.Error("cannot remove package", zap.String("name", name), zap.Error(err))
		s.fail(w, r, nethttp.StatusInternalServerError, "cannot remove the package")
	}
}
