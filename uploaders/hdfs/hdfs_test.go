package hdfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/fetch"
)

// The uploader's behaviour against a real NameNode is tested in
// test/hadoop (uploadertest, permissions, replication); these tests need
// no cluster.

func TestParseSettings(t *testing.T) {
	s, err := ParseSettings(spi.Config{KeyNameNode: "nn1:8020, nn2", KeyDirectory: "/egret/t/../wc/", KeyReplication: "2", KeyFilePerm: "640", KeyTimeout: "5s"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.NameNodes, ",") != "nn1:8020,nn2:8020" || s.Directory != "/egret/wc" || s.Replication != 2 || s.FilePerm != 0o640 || s.DirPerm != 0o755 {
		t.Errorf("settings %+v", s)
	}
	for name, tc := range map[string]struct {
		cfg  spi.Config
		want string
	}{
		"no namenode":      {spi.Config{KeyDirectory: "/d"}, KeyNameNode + " is required"},
		"namenode url":     {spi.Config{KeyNameNode: "hdfs://nn:8020", KeyDirectory: "/d"}, "without a scheme"},
		"no directory":     {spi.Config{KeyNameNode: "nn"}, KeyDirectory + " is required"},
		"relative dir":     {spi.Config{KeyNameNode: "nn", KeyDirectory: "egret/wc"}, "absolute HDFS path"},
		"root dir":         {spi.Config{KeyNameNode: "nn", KeyDirectory: "/"}, "root directory"},
		"unsubstituted":    {spi.Config{KeyNameNode: "nn", KeyDirectory: "/e/${TOPOLOGY}"}, "unsubstituted"},
		"bad replication":  {spi.Config{KeyNameNode: "nn", KeyDirectory: "/d", KeyReplication: "-1"}, KeyReplication},
		"bad permission":   {spi.Config{KeyNameNode: "nn", KeyDirectory: "/d", KeyFilePerm: "rw-r--r--"}, "octal permission"},
		"bad timeout":      {spi.Config{KeyNameNode: "nn", KeyDirectory: "/d", KeyTimeout: "0s"}, "must be positive"},
		"user with spaces": {spi.Config{KeyNameNode: "nn", KeyDirectory: "/d", KeyUser: "a b"}, "not a user name"},
	} {
		_, err := ParseSettings(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error containing %q", name, err, tc.want)
		}
	}
}

// TestUndoRefusesForeignURIs checks that Undo never deletes outside its
// NameNode and directory (it refuses before connecting).
func TestUndoRefusesForeignURIs(t *testing.T) {
	u, err := New(spi.Config{KeyNameNode: "127.0.0.1:1", KeyDirectory: "/egret/wc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{
		"hdfs://other:8020/egret/wc/wc-r-0123456789ab.tar.gz",
		"hdfs://127.0.0.1:1/egret/other/wc-r-0123456789ab.tar.gz",
		"hdfs://127.0.0.1:1/egret/wc/sub/wc-r-0123456789ab.tar.gz",
		"hdfs://127.0.0.1:1/egret/wc/.egret-tmp-1",
		"file:///egret/wc/wc-r-0123456789ab.tar.gz",
	} {
		err := u.Undo(context.Background(), uri)
		if err == nil || strings.Contains(err.Error(), "connect") {
			t.Errorf("Undo(%s) = %v; want a refusal before connecting", uri, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := u.Undo(ctx, "hdfs://127.0.0.1:1/egret/wc/wc-r-0123456789ab.tar.gz"); !errors.Is(err, context.Canceled) {
		t.Errorf("Undo with a cancelled context: %v", err)
	}
}

func TestUnreachableNameNode(t *testing.T) {
	u, err := New(spi.Config{KeyNameNode: "127.0.0.1:1", KeyDirectory: "/egret/wc", KeyTimeout: "2s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = u.Undo(context.Background(), "hdfs://127.0.0.1:1/egret/wc/wc-r-0123456789ab.tar.gz")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), KeyNameNode) {
		t.Errorf("Undo against an unreachable NameNode: %v; want one line naming %s", err, KeyNameNode)
	}
}

// TestPreviewURI: the URI of a dry run is the one Upload returns (the
// conformance tests in test/hadoop compare it with a real upload), computed
// without a NameNode.
func TestPreviewURI(t *testing.T) {
	u, err := New(spi.Config{KeyNameNode: "127.0.0.1:1", KeyDirectory: "/egret/wc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "topology")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	pkgPath := filepath.Join(dir, "wc.tar.gz")
	sha, err := fetch.CreateTarGz(pkgPath, map[string]string{"topology": bin})
	if err != nil {
		t.Fatal(err)
	}
	uri, err := u.(spi.URIPreviewer).PreviewURI(context.Background(), spi.Package{Topology: "wc", Role: "r", Path: pkgPath})
	if err != nil {
		t.Fatal(err)
	}
	if want := "hdfs://127.0.0.1:1/egret/wc/wc-r-" + sha[:12] + ".tar.gz"; uri != want {
		t.Errorf("PreviewURI = %s, want %s", uri, want)
	}
}
