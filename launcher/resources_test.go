package launcher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResourceFiles(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "bolts"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "split.py"), []byte("x"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "bolts", "count.py"), []byte("y"), 0o755))
	outside := filepath.Join(t.TempDir(), "shared.py")
	must(os.WriteFile(outside, []byte("z"), 0o644))
	must(os.Symlink(outside, filepath.Join(dir, "link.py")))
	files, err := resourceFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"resources/split.py":       filepath.Join(dir, "split.py"),
		"resources/bolts/count.py": filepath.Join(dir, "bolts", "count.py"),
		"resources/link.py":        filepath.Join(dir, "link.py"),
	}
	if len(files) != len(want) {
		t.Fatalf("resourceFiles = %v, want %v", files, want)
	}
	for k, v := range want {
		if files[k] != v {
			t.Errorf("entry %s = %q, want %q", k, files[k], v)
		}
	}

	must(os.Symlink(t.TempDir(), filepath.Join(dir, "linkdir")))
	if _, err := resourceFiles(dir); err == nil || !IsBadInput(err) || !strings.Contains(err.Error(), "linkdir is not a regular file") {
		t.Errorf("a link to a directory: %v, want a bad-input error naming it", err)
	}
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(dir, "missing"), "no such file"},
		{filepath.Join(dir, "split.py"), "is not a directory"},
		{t.TempDir(), "holds no file"},
	} {
		if _, err := resourceFiles(c.dir); err == nil || !IsBadInput(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("resourceFiles(%s) = %v, want a bad-input error with %q", c.dir, err, c.want)
		}
	}
}
