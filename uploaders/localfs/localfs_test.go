package localfs_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/fetch"
	"github.com/egret-stream/egret/uploaders/localfs"
	"github.com/egret-stream/egret/uploaders/uploadertest"
)

func newUploader(t *testing.T, dir string) spi.Uploader {
	t.Helper()
	u, err := localfs.New(spi.Config{localfs.KeyDirectory: dir}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestConformance(t *testing.T) {
	uploadertest.Run(t, func(t *testing.T) spi.Uploader {
		return newUploader(t, filepath.Join(t.TempDir(), "repo", "cluster", "role", "topology"))
	})
}

func TestRegistered(t *testing.T) {
	f, err := spi.LookupUploader("localfs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f(spi.Config{localfs.KeyDirectory: t.TempDir()}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  spi.Config
		want string
	}{
		{"missing", spi.Config{}, localfs.KeyDirectory},
		{"empty", spi.Config{localfs.KeyDirectory: ""}, "required"},
		{"unsubstituted", spi.Config{localfs.KeyDirectory: "/x/${TOPOLOGY}"}, "unsubstituted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := localfs.New(tc.cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%v) = %v; want an error mentioning %q", tc.cfg, err, tc.want)
			}
		})
	}
}

func makePkg(t *testing.T, topology string) spi.Package {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "bin")
	if err := os.WriteFile(src, []byte("binary of "+topology), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pkg.tar.gz")
	sha, err := fetch.CreateTarGz(out, map[string]string{"topology": src})
	if err != nil {
		t.Fatal(err)
	}
	return spi.Package{Topology: topology, Role: "alice", Cluster: "local", Path: out, SHA256: sha}
}

func TestNamingAndAtomicity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	u := newUploader(t, dir)
	pkg := makePkg(t, "wordcount")
	uri, err := u.Upload(context.Background(), pkg)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "wordcount-alice-"+pkg.SHA256[:12]+".tar.gz")
	pu, err := url.Parse(uri)
	if err != nil || pu.Scheme != "file" || pu.Path != want {
		t.Fatalf("URI %q; want file://%s", uri, want)
	}
	fi, err := os.Stat(want)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("stored package mode %s; want 0644", fi.Mode().Perm())
	}

	// A rejected upload leaves neither the package nor a temp file.
	bad := makePkg(t, "other")
	bad.SHA256 = pkg.SHA256
	if _, err := u.Upload(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "sha256 mismatch") {
		t.Fatalf("mismatched upload: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(want) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("repository holds %v; want only %s", names, filepath.Base(want))
	}
}

func TestUndoRefusesForeignURIs(t *testing.T) {
	dir := t.TempDir()
	u := newUploader(t, filepath.Join(dir, "repo"))
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{
		"file://" + victim,
		victim,
		"file://" + dir + "/repo/../victim.txt",
		"http://example.com/packages/x.tar.gz",
		"file://otherhost" + victim,
	} {
		if err := u.Undo(context.Background(), uri); err == nil {
			t.Errorf("Undo(%s) succeeded; want a refusal", uri)
		}
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("victim file removed: %v", err)
	}
}

func TestNamesRejected(t *testing.T) {
	u := newUploader(t, t.TempDir())
	for _, tc := range []struct{ topology, role string }{
		{"../escape", "alice"},
		{"word count", "alice"},
		{"wc", "a/b"},
		{".hidden", "alice"},
		{"wc", ""},
	} {
		pkg := makePkg(t, "ok")
		pkg.Topology, pkg.Role = tc.topology, tc.role
		if uri, err := u.Upload(context.Background(), pkg); err == nil {
			t.Errorf("Upload(topology %q, role %q) = %s; want an error", tc.topology, tc.role, uri)
		}
	}
}

func TestClosed(t *testing.T) {
	u := newUploader(t, t.TempDir())
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Upload(context.Background(), makePkg(t, "wc")); !errors.Is(err, spi.ErrClosed) {
		t.Fatalf("Upload after Close: %v; want spi.ErrClosed", err)
	}
}

// TestPreviewCreatesNothing: a preview names the file an upload would
// write without creating the repository directory.
func TestPreviewCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	u := newUploader(t, dir)
	pkg := filepath.Join(t.TempDir(), "p.tar.gz")
	if err := os.WriteFile(pkg, []byte("package"), 0o644); err != nil {
		t.Fatal(err)
	}
	uri, err := u.(spi.URIPreviewer).PreviewURI(context.Background(), spi.Package{Topology: "wc", Role: "me", Cluster: "local", Path: pkg})
	if err != nil {
		t.Fatal(err)
	}
	if want := "file://" + filepath.ToSlash(dir) + "/wc-me-"; !strings.HasPrefix(uri, want) {
		t.Errorf("PreviewURI = %s, want a name under %s", uri, want)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("PreviewURI touched the repository directory: %v", err)
	}
}
