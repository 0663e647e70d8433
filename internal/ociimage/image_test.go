package ociimage

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// staticBinary builds a small static Go program (with marker in it) and
// returns its path.
func staticBinary(t *testing.T, marker string) string {
	t.Helper()
	dir := t.TempDir()
	src := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"" + marker + "\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", "hello", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "hello")
}

func certs(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	pem := "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(p, []byte(pem), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestReproducible: the same inputs give the same digest and the same
// tarball bytes, even from copies made at other times; another binary or
// another creation time gives another digest.
func TestReproducible(t *testing.T) {
	bin, ca := staticBinary(t, "one"), certs(t)
	a, err := Build(Spec{Binary: bin, CACerts: ca})
	if err != nil {
		t.Fatal(err)
	}
	// A copy of the inputs with other file times and modes.
	bin2 := filepath.Join(t.TempDir(), "egret")
	data, _ := os.ReadFile(bin)
	if err := os.WriteFile(bin2, data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(bin2, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	b, err := Build(Spec{Binary: bin2, CACerts: ca})
	if err != nil {
		t.Fatal(err)
	}
	if da, db := digest(t, a), digest(t, b); da != db {
		t.Fatalf("same inputs, digests %s and %s", da, db)
	}
	ref, err := ParseRef("egret.local/egret:test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	if err := WriteArchive(a, ref, pa); err != nil {
		t.Fatal(err)
	}
	if err := WriteArchive(b, ref, pb); err != nil {
		t.Fatal(err)
	}
	ta, _ := os.ReadFile(pa)
	tb, _ := os.ReadFile(pb)
	if string(ta) != string(tb) {
		t.Fatal("same inputs, different tarballs")
	}
	c, err := Build(Spec{Binary: staticBinary(t, "two"), CACerts: ca})
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, c) == digest(t, a) {
		t.Fatal("another binary, same digest")
	}
	d, err := Build(Spec{Binary: bin, CACerts: ca, Created: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, d) == digest(t, a) {
		t.Fatal("another creation time, same digest")
	}
	// The tarball reads back as the same image.
	back, err := ReadArchive(pa)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, back) != digest(t, a) {
		t.Fatalf("tarball image %s, built %s", digest(t, back), digest(t, a))
	}
}

// TestContents: one layer with exactly the binary, the certificates and
// the user; the config runs egret as that non-root user.
func TestContents(t *testing.T) {
	bin, ca := staticBinary(t, "x"), certs(t)
	img, err := Build(Spec{Binary: bin, CACerts: ca})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || cf.Config.Entrypoint[0] != BinaryPath || cf.OS != "linux" || !cf.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("config: user %q entrypoint %v os %s created %s", cf.Config.User, cf.Config.Entrypoint, cf.OS, cf.Created)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]*tar.Header{}
	contents := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			contents[h.Name] = string(b)
		}
		if !h.ModTime.Equal(time.Unix(0, 0)) || h.Uname != "" {
			t.Errorf("%s: time %s owner %q", h.Name, h.ModTime, h.Uname)
		}
	}
	want := []string{"etc/", "etc/passwd", "etc/group", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt", "home/", "home/egret/", "tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/egret"}
	if len(files) != len(want) {
		t.Errorf("layer has %d entries, want %d: %v", len(files), len(want), files)
	}
	for _, w := range want {
		if files[w] == nil {
			t.Errorf("layer lacks %s", w)
		}
	}
	if h := files["usr/local/bin/egret"]; h == nil || h.Mode != 0o755 {
		t.Errorf("binary entry %+v", h)
	}
	if h := files["home/egret/"]; h == nil || h.Uid != UID {
		t.Errorf("home entry %+v", h)
	}
	if !strings.Contains(contents["etc/passwd"], "egret:x:65532:65532:") {
		t.Errorf("passwd: %q", contents["etc/passwd"])
	}
	data, _ := os.ReadFile(bin)
	if contents["usr/local/bin/egret"] != string(data) {
		t.Error("the binary in the layer differs from the input")
	}
}

// TestBadInput: a dynamically linked binary, a non-ELF file, a bundle
// without certificates and a bad reference are refused with a message
// that says what to do.
func TestBadInput(t *testing.T) {
	ca := certs(t)
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		spec Spec
		want string
	}{
		{Spec{Binary: "/bin/sh", CACerts: ca}, "CGO_ENABLED=0"}, // Debian's sh is dynamically linked
		{Spec{Binary: notELF, CACerts: ca}, "not an ELF executable"},
		{Spec{Binary: staticBinary(t, "x"), CACerts: notELF}, "holds no PEM certificate"},
		{Spec{Binary: staticBinary(t, "x"), CACerts: ca, Arch: "arm64"}, "build it with GOARCH=arm64"},
	}
	for _, c := range cases {
		if _, err := Build(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
	if _, err := ParseRef("Bad Ref"); err == nil {
		t.Error("bad reference accepted")
	}
}

// TestPushAndLayout: pushed to a registry (go-containerregistry's own
// registry server) the image keeps its digest, and so it does in an OCI
// layout.
func TestPushAndLayout(t *testing.T) {
	img, err := Build(Spec{Binary: staticBinary(t, "x"), CACerts: certs(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	ref, err := ParseRef(u.Host + "/egret/egret:1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Push(ctx, img, ref); err != nil {
		t.Fatal(err)
	}
	got, err := remote.Image(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, got) != digest(t, img) {
		t.Fatalf("pulled %s, pushed %s", digest(t, got), digest(t, img))
	}
	dir := filepath.Join(t.TempDir(), "layout")
	if err := WriteLayout(img, ref, dir); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	li, err := p.Image(digest(t, img))
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, li) != digest(t, img) {
		t.Fatal("layout image differs")
	}
}

// TestArchiveName: the archive names a Docker Hub image as containerd
// does (docker.io/library/..., which a pod's "busybox:1.36" resolves to),
// and its ref.name is the tag. ctr images import of such an archive and
// ctr run of the image were checked by hand with Debian's containerd 1.6.
func TestArchiveName(t *testing.T) {
	img, err := Build(Spec{Binary: staticBinary(t, "x"), CACerts: certs(t)})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ParseRef("busybox:1.36")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "a.tar")
	if err := WriteArchive(img, ref, p); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no index.json: %v", err)
		}
		if h.Name != "index.json" {
			continue
		}
		b, _ := io.ReadAll(tr)
		if !strings.Contains(string(b), `"io.containerd.image.name":"docker.io/library/busybox:1.36"`) || !strings.Contains(string(b), `"org.opencontainers.image.ref.name":"1.36"`) {
			t.Errorf("index.json: %s", b)
		}
		return
	}
}
