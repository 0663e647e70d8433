package fetch_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entry is one crafted tar entry.
type entry struct {
	name     string
	typ      byte
	body     string
	link     string
	mode     int64
	size     int64 // overrides len(body) in the header when non-zero
	truncate bool  // write the header only (with size), no body
}

func file(name, body string) entry {
	return entry{name: name, typ: tar.TypeReg, body: body, mode: 0o644}
}
func dir(name string) entry { return entry{name: name, typ: tar.TypeDir, mode: 0o755} }
func symlink(name, target string) entry {
	return entry{name: name, typ: tar.TypeSymlink, link: target, mode: 0o777}
}
func hardlink(name, target string) entry { return entry{name: name, typ: tar.TypeLink, link: target} }

// tgz builds a gzip-compressed tarball from entries, without the checks a
// well-behaved writer would make.
func tgz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		size := int64(len(e.body))
		if e.size != 0 {
			size = e.size
		}
		if e.typ != tar.TypeReg {
			size = 0
		}
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, Size: size, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("header %q: %v", e.name, err)
		}
		if e.truncate {
			break
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatalf("body %q: %v", e.name, err)
		}
	}
	if !entries[len(entries)-1].truncate {
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		tw.Flush()
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sandbox is a parent directory holding the archive, the target "dst" and
// an "outside" directory that extraction must never touch.
type sandbox struct{ parent, archive, dst, outside string }

func newSandbox(t testing.TB, data []byte) sandbox {
	t.Helper()
	p := t.TempDir()
	s := sandbox{parent: p, archive: filepath.Join(p, "in.tar.gz"), dst: filepath.Join(p, "dst"), outside: filepath.Join(p, "outside")}
	if err := os.WriteFile(s.archive, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(s.outside, 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// check fails t when anything was written outside dst, or a symlink under
// dst resolves outside it.
func (s sandbox) check(t testing.TB) {
	t.Helper()
	entries, err := os.ReadDir(s.parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case "in.tar.gz", "dst", "outside":
		default:
			t.Fatalf("extraction wrote %s outside the target", e.Name())
		}
	}
	if out, _ := os.ReadDir(s.outside); len(out) != 0 {
		t.Fatalf("extraction wrote %s into the outside directory", out[0].Name())
	}
	if _, err := os.Lstat(s.dst); err != nil {
		return
	}
	realDst, err := filepath.EvalSymlinks(s.dst)
	if err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(s.dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil // dangling: points nowhere
		}
		if target != realDst && !strings.HasPrefix(target, realDst+string(filepath.Separator)) {
			t.Fatalf("symlink %s resolves to %s, outside %s", p, target, realDst)
		}
		return nil
	})
}
