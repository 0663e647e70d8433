package treehash

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDiff(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(root, "a", "f"), []byte("one"), 0o644))
	must(os.WriteFile(filepath.Join(root, "gone"), nil, 0o644))
	must(os.Symlink("a/f", filepath.Join(root, "link")))
	before, err := Of(root)
	must(err)
	if again, err := Of(root); err != nil || again.Diff(before) != nil {
		t.Fatalf("the same tree differs from itself: %v %v", again.Diff(before), err)
	}

	must(os.WriteFile(filepath.Join(root, "a", "f"), []byte("two"), 0o644))
	must(os.Remove(filepath.Join(root, "gone")))
	must(os.WriteFile(filepath.Join(root, "a", "b", "new"), nil, 0o644))
	must(os.Chmod(filepath.Join(root, "a", "b"), 0o700))
	must(os.Remove(filepath.Join(root, "link")))
	must(os.Symlink("a", filepath.Join(root, "link")))
	after, err := Of(root)
	must(err)
	want := []string{"~ a/b", "+ a/b/new", "~ a/f", "- gone", "~ link"}
	if got := before.Diff(after); !slices.Equal(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
}

func TestMissingRoot(t *testing.T) {
	tr, err := Of(filepath.Join(t.TempDir(), "missing"))
	if err != nil || len(tr) != 0 {
		t.Errorf("Of(missing) = %v, %v; want an empty tree", tr, err)
	}
}
