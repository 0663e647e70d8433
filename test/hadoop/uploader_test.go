package hadoop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/fetch"
	"github.com/egret-stream/egret/internal/hdfsx"
	"github.com/egret-stream/egret/plugins/plugintest"
	egrethdfs "github.com/egret-stream/egret/uploaders/hdfs"
	"github.com/egret-stream/egret/uploaders/uploadertest"
)

func randomName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// uploaderConfig is an hdfs uploader's config with a fresh directory.
func uploaderConfig(c string, dir string) spi.Config {
	return spi.Config{
		egrethdfs.KeyNameNode:    c,
		egrethdfs.KeyDirectory:   dir,
		egrethdfs.KeyReplication: "1",
		egrethdfs.KeyTimeout:     "30s",
	}
}

// dfs is an HDFS client of the cluster's superuser, for the tests' own
// checks.
func dfs(t *testing.T) *hdfs.Client {
	t.Helper()
	c := needCluster(t)
	cl, err := hdfsx.Dial(context.Background(), []string{c.NameNode}, c.User, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func TestUploaderConformance(t *testing.T) {
	c := needCluster(t)
	uploadertest.Run(t, func(t *testing.T) spi.Uploader {
		u, err := egrethdfs.New(uploaderConfig(c.NameNode, "/egret/conformance/"+randomName("inproc")), zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		return u
	})
}

func TestUploaderConformancePlugin(t *testing.T) {
	c := needCluster(t)
	uploadertest.Run(t, func(t *testing.T) spi.Uploader {
		return plugintest.LoadUploader(t, "github.com/egret-stream/egret/cmd/egret-uploader-hdfs", "hdfsplugin",
			uploaderConfig(c.NameNode, "/egret/conformance/"+randomName("plugin")))
	})
}

// TestUploaderWritesReplicationAndPermission checks the file HDFS holds:
// the configured replication and permission, in the configured directory,
// and that Undo removes the file and the directory it left empty.
func TestUploaderWritesReplicationAndPermission(t *testing.T) {
	c := needCluster(t)
	cl := dfs(t)
	dir := "/egret/attrs/" + randomName("topo")
	cfg := uploaderConfig(c.NameNode, dir)
	cfg[egrethdfs.KeyFilePerm] = "0640"
	cfg[egrethdfs.KeyDirectoryPerm] = "0750"
	u, err := egrethdfs.New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	pkg := makePackage(t, "attrs", map[string]string{"topology": "#!/bin/sh\n"})
	preview, err := u.(spi.URIPreviewer).PreviewURI(context.Background(), pkg)
	if err != nil {
		t.Fatal(err)
	}
	uri, err := u.Upload(context.Background(), pkg)
	if err != nil {
		t.Fatal(err)
	}
	if preview != uri {
		t.Errorf("PreviewURI %s, Upload %s", preview, uri)
	}
	loc, err := hdfsx.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	if loc.NameNode != c.NameNode || filepath.Dir(loc.Path) != dir {
		t.Fatalf("URI %s is not in hdfs://%s%s", uri, c.NameNode, dir)
	}
	fi, err := cl.Stat(loc.Path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("package mode %s, want 0640", fi.Mode().Perm())
	}
	if got := fi.Sys().(*hdfs.FileStatus).GetBlockReplication(); got != 1 {
		t.Errorf("replication %d, want 1", got)
	}
	di, err := cl.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o750 {
		t.Errorf("directory mode %s, want 0750", di.Mode().Perm())
	}
	entries, err := cl.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after one upload, want only the package (no temp file)", len(entries))
	}
	if err := u.Undo(context.Background(), uri); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Undo left the empty directory %s (stat: %v)", dir, err)
	}
}

// TestUploaderPermissionDenied uploads as a user HDFS does not let write:
// the error is one line naming the user and how to fix it, and nothing is
// written.
func TestUploaderPermissionDenied(t *testing.T) {
	c := needCluster(t)
	cl := dfs(t)
	parent := "/egret/" + randomName("protected")
	if err := cl.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := uploaderConfig(c.NameNode, parent+"/wordcount")
	cfg[egrethdfs.KeyUser] = "mallory"
	u, err := egrethdfs.New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	_, err = u.Upload(context.Background(), makePackage(t, "wordcount", map[string]string{"topology": "x"}))
	if err == nil {
		t.Fatal("upload as a user without write permission succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, `"mallory"`) || !strings.Contains(msg, "permission denied") {
		t.Errorf("error %q: want one line saying permission denied for user \"mallory\"", msg)
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("error %v does not wrap fs.ErrPermission", err)
	}
	entries, err := cl.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("a refused upload left %d entries in %s", len(entries), parent)
	}
}

// TestFetchHDFS fetches an uploaded package through fetch (what an
// executor does with an hdfs:// URI) and a missing one (spi.ErrNotFound).
func TestFetchHDFS(t *testing.T) {
	c := needCluster(t)
	u, err := egrethdfs.New(uploaderConfig(c.NameNode, "/egret/fetch/"+randomName("topo")), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	pkg := makePackage(t, "fetched", map[string]string{"topology": "bin"})
	uri, err := u.Upload(context.Background(), pkg)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "p.tar.gz")
	if err := fetch.FetchWith(context.Background(), uri, dst, pkg.SHA256, fetch.Options{}); err != nil {
		t.Fatal(err)
	}
	err = fetch.FetchWith(context.Background(), uri+".missing", dst+"2", "", fetch.Options{})
	if !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("fetch of a missing hdfs file: %v; want spi.ErrNotFound", err)
	}
}

// makePackage builds a topology package of files (name → content).
func makePackage(t *testing.T, topology string, files map[string]string) spi.Package {
	t.Helper()
	dir := t.TempDir()
	src := map[string]string{}
	for name, content := range files {
		p := filepath.Join(dir, "src", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		src[name] = p
	}
	out := filepath.Join(dir, topology+".tar.gz")
	sha, err := fetch.CreateTarGz(out, src)
	if err != nil {
		t.Fatal(err)
	}
	return spi.Package{Topology: topology, Role: "tester", Cluster: "hadoop", Path: out, SHA256: sha}
}
