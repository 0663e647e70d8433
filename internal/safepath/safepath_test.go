package safepath

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestElem(t *testing.T) {
	for _, s := range []string{"a", "wordcount", "a.b", "...", "..a", "a..", " a ", "%2e%2e", "\uff0e\uff0e", "a\uff0fb", strings.Repeat("x", MaxElem)} {
		if err := Elem(s); err != nil {
			t.Errorf("Elem(%q) = %v, want nil", s, err)
		}
	}
	for _, s := range []string{"", ".", "..", "/", "a/b", "/abs", "a\\b", "a\x00b", "../x", strings.Repeat("x", MaxElem+1)} {
		err := Elem(s)
		if !errors.Is(err, ErrUnsafe) {
			t.Errorf("Elem(%q) = %v, want ErrUnsafe", s, err)
			continue
		}
		if strings.ContainsAny(err.Error(), "\n\x00") {
			t.Errorf("Elem(%q): message is not one line: %q", s, err)
		}
	}
}

func TestJoin(t *testing.T) {
	root := filepath.FromSlash("/home/u/.egret/topologies/local/u")
	got, err := Join(root, "wordcount", "container-1")
	if want := filepath.Join(root, "wordcount", "container-1"); err != nil || got != want {
		t.Errorf("Join = %q, %v; want %q", got, err, want)
	}
	if got, err := Join(root + "/./"); err != nil || got != root {
		t.Errorf("Join(root) = %q, %v; want the clean root %q", got, err, root)
	}
	for _, elems := range [][]string{{".."}, {"../../../.."}, {"a", ".."}, {"a/b"}, {"/abs"}, {""}, {"a\x00"}, {"."}} {
		if p, err := Join(root, elems...); !errors.Is(err, ErrUnsafe) {
			t.Errorf("Join(root, %q) = %q, %v; want ErrUnsafe", elems, p, err)
		}
	}
	if _, err := Join("", "a"); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Join with an empty root = %v, want ErrUnsafe", err)
	}
}

func TestJoinRel(t *testing.T) {
	got, err := JoinRel("/r", "tree/topologies/wordcount")
	if want := filepath.FromSlash("/r/tree/topologies/wordcount"); err != nil || got != want {
		t.Errorf("JoinRel = %q, %v; want %q", got, err, want)
	}
	for _, rel := range []string{"", "/abs", "a//b", "a/", "a/../b", "..", "./a", "a/./b", "../../etc/passwd"} {
		if p, err := JoinRel("/r", rel); !errors.Is(err, ErrUnsafe) {
			t.Errorf("JoinRel(%q) = %q, %v; want ErrUnsafe", rel, p, err)
		}
	}
}

// FuzzJoin: whatever the elements, a path Join returns lies strictly below
// the root.
func FuzzJoin(f *testing.F) {
	for _, s := range []string{"a", "..", "../x", "a/b", "/abs", "%2e%2e", "a\x00b", "\uff0e\uff0e", "a\\..\\b", "...", "a/../.."} {
		f.Add("/root/dir", s, "b")
		f.Add("rel", "a", s)
	}
	f.Fuzz(func(t *testing.T, root, a, b string) {
		if root == "" {
			return
		}
		for _, elems := range [][]string{{a}, {a, b}} {
			p, err := Join(root, elems...)
			if err != nil {
				continue
			}
			clean := filepath.Clean(root)
			rel, rerr := filepath.Rel(clean, p)
			if rerr != nil || rel == "." || !filepath.IsLocal(rel) || strings.Contains(p, "\x00") {
				t.Fatalf("Join(%q, %q) = %q, which is not below the root", root, elems, p)
			}
			if len(strings.Split(filepath.ToSlash(rel), "/")) != len(elems) {
				t.Fatalf("Join(%q, %q) = %q: not one path element per element", root, elems, p)
			}
		}
		if p, err := JoinRel(root, a); err == nil {
			if rel, rerr := filepath.Rel(filepath.Clean(root), p); rerr != nil || !filepath.IsLocal(rel) {
				t.Fatalf("JoinRel(%q, %q) = %q, which is not below the root", root, a, p)
			}
		}
	})
}
