package fetch_test

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/egret-stream/egret/internal/fetch"
)

func TestExtractRejectsMaliciousArchives(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []entry
		want    string // substring of the error
	}{
		{"DotDot", []entry{file("../outside/evil", "x")}, `".."`},
		{"DotDotDeep", []entry{file("a/b/../../../outside/evil", "x")}, `".."`},
		{"Absolute", []entry{file("/tmp/egret-evil", "x")}, "absolute"},
		{"Backslash", []entry{file(`..\outside\evil`, "x")}, "backslash"},
		{"SymlinkAbsolute", []entry{symlink("etc", "/etc")}, "absolute"},
		{"SymlinkUp", []entry{symlink("up", "../outside")}, "outside"},
		{"SymlinkDeepUp", []entry{dir("a"), symlink("a/up", "../../outside")}, "outside"},
		// Each link is lexically inside, but a/t -> s/.. goes through
		// a/s -> .. (the root) and then one level above it.
		{"SymlinkChain", []entry{dir("a"), symlink("a/s", ".."), symlink("a/t", "s/..")}, "resolves outside"},
		{"SymlinkChainLaterLink", []entry{dir("a"), symlink("a/t", "s/../outside"), symlink("a/s", "..")}, "resolves outside"},
		{"WriteThroughSymlink", []entry{symlink("link", "sub"), file("link/x", "x")}, "exists"},
		{"HardlinkOutside", []entry{hardlink("h", "../outside/secret")}, "hard link"},
		{"HardlinkAbsolute", []entry{hardlink("h", "/etc/passwd")}, "hard link"},
		{"HardlinkToMissing", []entry{hardlink("h", "nothing")}, "hard link"},
		{"CharDevice", []entry{{name: "null", typ: tar.TypeChar, mode: 0o666}}, "unsupported entry type"},
		{"FIFO", []entry{{name: "fifo", typ: tar.TypeFifo, mode: 0o666}}, "unsupported entry type"},
		{"HugeSize", []entry{{name: "big", typ: tar.TypeReg, mode: 0o644, size: 1 << 40, truncate: true}}, "exceeds"},
		{"Truncated", []entry{{name: "short", typ: tar.TypeReg, mode: 0o644, body: "", size: 100, truncate: true}}, "EOF"},
		{"FileReplacesDir", []entry{dir("d"), file("d", "x")}, "directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSandbox(t, tgz(t, tc.entries...))
			err := fetch.Extract(context.Background(), s.archive, s.dst)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Extract = %v; want an error containing %q", err, tc.want)
			}
			if testing.Verbose() {
				t.Log(err)
			}
			s.check(t)
		})
	}
}

func TestExtractPreexistingSymlinkIsNotFollowedOut(t *testing.T) {
	s := newSandbox(t, tgz(t, file("out/x", "x")))
	if err := os.MkdirAll(s.dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside", filepath.Join(s.dst, "out")); err != nil {
		t.Fatal(err)
	}
	if err := fetch.Extract(context.Background(), s.archive, s.dst); err == nil {
		t.Fatal("Extract wrote through a symlink leading outside the target")
	}
	os.Remove(filepath.Join(s.dst, "out")) // the planted link itself is not the extractor's
	s.check(t)
}

func TestExtractLimits(t *testing.T) {
	s := newSandbox(t, tgz(t, file("a", "0123456789"), file("b", "0123456789")))
	err := fetch.ExtractWith(context.Background(), s.archive, s.dst, fetch.ExtractOptions{MaxBytes: 15})
	if !errors.Is(err, fetch.ErrTooLarge) {
		t.Errorf("MaxBytes: %v; want ErrTooLarge", err)
	}
	s = newSandbox(t, tgz(t, dir("a"), dir("b"), dir("c")))
	err = fetch.ExtractWith(context.Background(), s.archive, s.dst, fetch.ExtractOptions{MaxEntries: 2})
	if !errors.Is(err, fetch.ErrTooLarge) {
		t.Errorf("MaxEntries: %v; want ErrTooLarge", err)
	}
}

func TestExtractGood(t *testing.T) {
	s := newSandbox(t, tgz(t,
		dir("./"),
		dir("bin/"),
		entry{name: "bin/topology", typ: tar.TypeReg, body: "#!/bin/sh\n", mode: 0o4755},
		file("./conf/cluster.yaml", "a: 1\n"),
		symlink("conf/current", "cluster.yaml"),
		symlink("bin/conf", "../conf"),
		hardlink("conf/copy.yaml", "conf/cluster.yaml"),
		file("conf/cluster.yaml.bak", "old"),
		file("conf/cluster.yaml.bak", "new"), // later entry wins
	))
	if err := fetch.Extract(context.Background(), s.archive, s.dst); err != nil {
		t.Fatal(err)
	}
	s.check(t)
	fi, err := os.Stat(filepath.Join(s.dst, "bin/topology"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("bin/topology mode %s; want -rwxr-xr-x without setuid", fi.Mode())
	}
	for p, want := range map[string]string{
		"conf/current":          "a: 1\n",
		"bin/conf/cluster.yaml": "a: 1\n",
		"conf/copy.yaml":        "a: 1\n",
		"conf/cluster.yaml.bak": "new",
	} {
		got, err := os.ReadFile(filepath.Join(s.dst, p))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", p, got, err, want)
		}
	}
}

func TestExtractNotGzip(t *testing.T) {
	s := newSandbox(t, []byte("this is not a tarball"))
	if err := fetch.Extract(context.Background(), s.archive, s.dst); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Fatalf("Extract = %v; want a gzip error", err)
	}
	if err := fetch.Extract(context.Background(), filepath.Join(s.parent, "missing.tar.gz"), s.dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Extract of a missing file = %v; want ErrNotExist", err)
	}
}

func TestExtractCanceled(t *testing.T) {
	s := newSandbox(t, tgz(t, file("a", "x")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := fetch.Extract(ctx, s.archive, s.dst); !errors.Is(err, context.Canceled) {
		t.Fatalf("Extract = %v; want context.Canceled", err)
	}
}

func FuzzExtract(f *testing.F) {
	f.Add(tgz(f, file("a", "hello"), dir("d"), file("d/b", "x"), symlink("l", "a")))
	f.Add(tgz(f, file("../evil", "x")))
	f.Add(tgz(f, dir("a"), symlink("a/s", ".."), symlink("a/t", "s/..")))
	f.Add(tgz(f, symlink("link", "sub"), file("link/x", "x")))
	f.Add(tgz(f, hardlink("h", "../x")))
	f.Add(tgz(f, symlink("up", "../outside")))
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00})
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newSandbox(t, data)
		_ = fetch.ExtractWith(context.Background(), s.archive, s.dst, fetch.ExtractOptions{MaxBytes: 1 << 20, MaxEntries: 1000})
		s.check(t)
	})
}
