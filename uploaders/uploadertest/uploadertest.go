package uploadertest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/spi/spitest"
	"github.com/egret-stream/egret/internal/fetch"
)

// Suite is the conformance suite with options.
type Suite struct {
	// New returns a fresh uploader for one subtest. New or Open is
	// required.
	New func(t *testing.T) spi.Uploader
	// Open is New for suites that also run outside go test (egret plugin
	// verify): its error fails the check. When set, it is used instead of
	// New.
	Open func(ctx context.Context) (spi.Uploader, error)
	// Fetch are the options used to fetch uploaded packages back, e.g.
	// the bearer token of an http package server. Log defaults to a test
	// logger.
	Fetch fetch.Options
	// Role and Cluster fill the packages' fields (default "tester" and
	// "conformance").
	Role, Cluster string
}

// Run runs the suite with default options against the uploaders that
// newUploader returns.
func Run(t spitest.T, newUploader func(t *testing.T) spi.Uploader) {
	Suite{New: newUploader}.Run(t)
}

// Run runs every conformance test as a subtest of t.
func (s Suite) Run(t spitest.T) {
	if s.New == nil && s.Open == nil {
		t.Fatal("uploadertest: Suite.New and Suite.Open are nil")
	}
	if s.Open == nil && spitest.Testing(t) == nil {
		t.Fatal("uploadertest: Suite.New needs go test (a *testing.T); set Suite.Open to run the suite elsewhere")
	}
	if s.Role == "" {
		s.Role = "tester"
	}
	if s.Cluster == "" {
		s.Cluster = "conformance"
	}
	tests := []struct {
		name string
		fn   func(spitest.T)
	}{
		{"RoundTrip", s.testRoundTrip},
		{"WithoutSHA", s.testWithoutSHA},
		{"UploadTwiceSameContent", s.testTwiceSame},
		{"UploadTwiceDifferentContent", s.testTwiceDifferent},
		{"Undo", s.testUndo},
		{"UndoUnknownURI", s.testUndoUnknown},
		{"MissingFile", s.testMissingFile},
		{"SHAMismatch", s.testSHAMismatch},
		{"InvalidPackage", s.testInvalidPackage},
		{"ConcurrentUploads", s.testConcurrent},
		{"CanceledContext", s.testCanceled},
		{"PreviewURI", s.testPreviewURI},
	}
	for _, tc := range tests {
		spitest.Run(t, tc.name, tc.fn)
	}
}

func (s Suite) uploader(t spitest.T) spi.Uploader {
	t.Helper()
	var u spi.Uploader
	if s.Open != nil {
		var err error
		if u, err = s.Open(ctxFor(t)); err != nil {
			t.Fatalf("open an uploader: %v", err)
		}
	} else {
		u = s.New(spitest.Testing(t))
	}
	if u == nil {
		t.Fatal("uploadertest: New returned nil")
	}
	t.Cleanup(func() {
		if err := u.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return u
}

func ctxFor(t spitest.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// built is a package made by the suite.
type built struct {
	pkg   spi.Package
	files map[string][]byte // archive name -> content
	bytes []byte            // the .tar.gz itself
}

// makePackage builds a topology package (binary, definition, config) whose
// content depends on seed.
func (s Suite) makePackage(t spitest.T, topology string, seed uint64) built {
	t.Helper()
	dir := t.TempDir()
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	bin := make([]byte, 300<<10+int(seed%1024))
	rand.NewChaCha8(key).Read(bin)
	files := map[string][]byte{
		"topology":                    bin,
		topology + ".defn":            fmt.Appendf(nil, "topology %s seed %d\n", topology, seed),
		"egret-conf/cluster.yaml":     fmt.Appendf(nil, "cluster: %s\n", s.Cluster),
		"egret-conf/override.yaml":    []byte("egret.test: true\n"),
		"egret-conf/nested/deep.yaml": []byte("deep: 1\n"),
	}
	src := map[string]string{}
	for name, data := range files {
		p := filepath.Join(dir, "src", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if name == "topology" {
			mode = 0o755
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		src[name] = p
	}
	out := filepath.Join(dir, topology+".tar.gz")
	sha, err := fetch.CreateTarGz(out, src)
	if err != nil {
		t.Fatalf("CreateTarGz: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return built{
		pkg:   spi.Package{Topology: topology, Role: s.Role, Cluster: s.Cluster, Path: out, SHA256: sha},
		files: files,
		bytes: b,
	}
}

func (s Suite) fetchOpts(t spitest.T) fetch.Options {
	o := s.Fetch
	if o.Log == nil {
		o.Log = zaptest.NewLogger(t)
	}
	return o
}

// fetchBack downloads uri and checks it byte for byte against want.
func (s Suite) fetchBack(t spitest.T, uri string, want built) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "fetched.tar.gz")
	if err := fetch.FetchWith(ctxFor(t), uri, dst, want.pkg.SHA256, s.fetchOpts(t)); err != nil {
		t.Fatalf("fetch %s: %v", uri, err)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.bytes) {
		t.Fatalf("fetched %d bytes from %s, which differ from the %d bytes uploaded", len(got), uri, len(want.bytes))
	}
	sha, err := fetch.SHA256File(ctxFor(t), dst)
	if err != nil {
		t.Fatal(err)
	}
	if sha != want.pkg.SHA256 {
		t.Fatalf("fetched sha256 %s, uploaded %s", sha, want.pkg.SHA256)
	}
	return dst
}

func (s Suite) upload(t spitest.T, u spi.Uploader, b built) string {
	t.Helper()
	uri, err := u.Upload(ctxFor(t), b.pkg)
	if err != nil {
		t.Fatalf("Upload(%s): %v", b.pkg.Topology, err)
	}
	if uri == "" {
		t.Fatalf("Upload(%s) returned an empty URI", b.pkg.Topology)
	}
	return uri
}

func (s Suite) testRoundTrip(t spitest.T) {
	u := s.uploader(t)
	b := s.makePackage(t, "roundtrip", 1)
	uri := s.upload(t, u, b)
	dst := s.fetchBack(t, uri, b)

	out := t.TempDir()
	if err := fetch.Extract(ctxFor(t), dst, out); err != nil {
		t.Fatalf("Extract: %v", err)
	}
	for name, want := range b.files {
		p := filepath.Join(out, filepath.FromSlash(name))
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("extracted package lacks %s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("extracted %s differs from the original", name)
		}
	}
	fi, err := os.Stat(filepath.Join(out, "topology"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("extracted topology binary lost its execute bit: mode %s", fi.Mode())
	}
}

func (s Suite) testWithoutSHA(t spitest.T) {
	u := s.uploader(t)
	b := s.makePackage(t, "nosha", 2)
	pkg := b.pkg
	pkg.SHA256 = ""
	uri, err := u.Upload(ctxFor(t), pkg)
	if err != nil {
		t.Fatalf("Upload without SHA256: %v", err)
	}
	s.fetchBack(t, uri, b)
}

func (s Suite) testTwiceSame(t spitest.T) {
	u := s.uploader(t)
	b := s.makePackage(t, "twicesame", 3)
	uri1 := s.upload(t, u, b)
	uri2 := s.upload(t, u, b)
	s.fetchBack(t, uri1, b)
	s.fetchBack(t, uri2, b)
}

func (s Suite) testTwiceDifferent(t spitest.T) {
	u := s.uploader(t)
	b1 := s.makePackage(t, "twicediff", 4)
	b2 := s.makePackage(t, "twicediff", 5)
	if b1.pkg.SHA256 == b2.pkg.SHA256 {
		t.Fatal("uploadertest: packages with different content have the same digest")
	}
	uri1 := s.upload(t, u, b1)
	uri2 := s.upload(t, u, b2)
	s.fetchBack(t, uri2, b2)
	// The first URI may have been replaced (same name) or kept (content
	// addressed); either way a fetch verified against the first digest must
	// never yield the second package.
	dst := filepath.Join(t.TempDir(), "first.tar.gz")
	err := fetch.FetchWith(ctxFor(t), uri1, dst, b1.pkg.SHA256, s.fetchOpts(t))
	if err == nil {
		got, rerr := os.ReadFile(dst)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if !bytes.Equal(got, b1.bytes) {
			t.Fatalf("first URI %s serves bytes that are not the first package", uri1)
		}
	} else if _, serr := os.Stat(dst); serr == nil {
		t.Fatalf("failed fetch of %s left a file at %s: %v", uri1, dst, err)
	}
}

func (s Suite) expectGone(t spitest.T, uri string) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "gone.tar.gz")
	err := fetch.FetchWith(ctxFor(t), uri, dst, "", s.fetchOpts(t))
	if err == nil {
		t.Fatalf("fetch of %s succeeded after Undo", uri)
	}
	if !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("fetch of %s after Undo: %v; want an error wrapping spi.ErrNotFound", uri, err)
	}
	if _, serr := os.Stat(dst); serr == nil {
		t.Fatalf("failed fetch of %s left a file at %s", uri, dst)
	}
}

func (s Suite) testUndo(t spitest.T) {
	u := s.uploader(t)
	b := s.makePackage(t, "undo", 6)
	uri := s.upload(t, u, b)
	s.fetchBack(t, uri, b)
	if err := u.Undo(ctxFor(t), uri); err != nil {
		t.Fatalf("Undo(%s): %v", uri, err)
	}
	s.expectGone(t, uri)
	if err := u.Undo(ctxFor(t), uri); err != nil {
		t.Fatalf("second Undo(%s) of a removed package: %v; undoing a missing package must succeed", uri, err)
	}
}

// sibling replaces the last path element of uri with a name never uploaded.
func sibling(t spitest.T, uri string) string {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil || u.Path == "" || strings.HasSuffix(u.Path, "/") {
		t.Skipf("cannot derive a sibling of URI %q", uri)
	}
	u.Path = path.Join(path.Dir(u.Path), fmt.Sprintf("never-uploaded-%d.tar.gz", time.Now().UnixNano()))
	u.RawPath = ""
	return u.String()
}

func (s Suite) testUndoUnknown(t spitest.T) {
	u := s.uploader(t)
	b := s.makePackage(t, "undounknown", 7)
	uri := s.upload(t, u, b)
	other := sibling(t, uri)
	if err := u.Undo(ctxFor(t), other); err != nil {
		t.Fatalf("Undo(%s) of a never-uploaded package: %v; it must succeed", other, err)
	}
	s.fetchBack(t, uri, b) // an Undo of another name must not touch this one
}

func (s Suite) testMissingFile(t spitest.T) {
	u := s.uploader(t)
	missing := filepath.Join(t.TempDir(), "does-not-exist.tar.gz")
	_, err := u.Upload(ctxFor(t), spi.Package{Topology: "missing", Role: s.Role, Cluster: s.Cluster, Path: missing})
	if err == nil {
		t.Fatal("Upload of a missing file succeeded")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Upload of a missing file: %v; want an error wrapping fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), missing) {
		t.Errorf("Upload of a missing file: %q does not name the path %s", err, missing)
	}
}

func (s Suite) testSHAMismatch(t spitest.T) {
	u := s.uploader(t)
	b := s.makePackage(t, "shamismatch", 8)
	other := s.makePackage(t, "shamismatch", 9)
	pkg := b.pkg
	pkg.SHA256 = other.pkg.SHA256
	uri, err := u.Upload(ctxFor(t), pkg)
	if err == nil {
		t.Fatalf("Upload with a wrong Package.SHA256 succeeded (URI %s)", uri)
	}
	if !strings.Contains(strings.ToLower(err.Error()), "sha") {
		t.Errorf("Upload with a wrong Package.SHA256: %q does not mention the checksum", err)
	}
}

func (s Suite) testInvalidPackage(t spitest.T) {
	u := s.uploader(t)
	b := s.makePackage(t, "invalid", 10)
	for _, tc := range []struct {
		name string
		mut  func(*spi.Package)
	}{
		{"NoTopology", func(p *spi.Package) { p.Topology = "" }},
		{"NoPath", func(p *spi.Package) { p.Path = "" }},
		{"MalformedSHA", func(p *spi.Package) { p.SHA256 = "not-a-digest" }},
	} {
		pkg := b.pkg
		tc.mut(&pkg)
		if uri, err := u.Upload(ctxFor(t), pkg); err == nil {
			t.Errorf("%s: Upload succeeded (URI %s); want an error", tc.name, uri)
		}
	}
}

func (s Suite) testConcurrent(t spitest.T) {
	u := s.uploader(t)
	const n = 6
	pkgs := make([]built, n)
	for i := range pkgs {
		pkgs[i] = s.makePackage(t, fmt.Sprintf("concurrent%d", i), uint64(100+i))
	}
	uris := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range pkgs {
		wg.Go(func() { uris[i], errs[i] = u.Upload(ctxFor(t), pkgs[i].pkg) })
	}
	wg.Wait()
	seen := map[string]int{}
	for i := range pkgs {
		if errs[i] != nil {
			t.Fatalf("concurrent Upload %d: %v", i, errs[i])
		}
		if j, dup := seen[uris[i]]; dup {
			t.Fatalf("topologies %d and %d got the same URI %s", j, i, uris[i])
		}
		seen[uris[i]] = i
	}
	for i := range pkgs {
		s.fetchBack(t, uris[i], pkgs[i])
	}
}

func (s Suite) testCanceled(t spitest.T) {
	u := s.uploader(t)
	b := s.makePackage(t, "canceled", 11)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	uri, err := u.Upload(ctx, b.pkg)
	if err == nil {
		t.Fatalf("Upload with a canceled context succeeded (URI %s)", uri)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Upload with a canceled context: %v; want an error wrapping context.Canceled", err)
	}
}

// testPreviewURI checks the optional spi.URIPreviewer: the preview stores
// nothing and names the URI the upload then returns.
func (s Suite) testPreviewURI(t spitest.T) {
	u := s.uploader(t)
	p, ok := u.(spi.URIPreviewer)
	if !ok {
		t.Skip("the uploader does not implement spi.URIPreviewer")
	}
	b := s.makePackage(t, "preview", 12)
	preview, err := p.PreviewURI(ctxFor(t), b.pkg)
	if err != nil {
		t.Fatalf("PreviewURI: %v", err)
	}
	s.expectGone(t, preview)
	nosha := b.pkg
	nosha.SHA256 = ""
	if again, err := p.PreviewURI(ctxFor(t), nosha); err != nil || again != preview {
		t.Fatalf("PreviewURI without SHA256 = %q, %v; want %q", again, err, preview)
	}
	if uri := s.upload(t, u, b); uri != preview {
		t.Fatalf("Upload returned %s, PreviewURI %s", uri, preview)
	}
	missing := b.pkg
	missing.Path = filepath.Join(t.TempDir(), "does-not-exist.tar.gz")
	missing.SHA256 = ""
	if uri, err := p.PreviewURI(ctxFor(t), missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("PreviewURI of a missing file = %q, %v; want an error wrapping fs.ErrNotExist", uri, err)
	}
}
