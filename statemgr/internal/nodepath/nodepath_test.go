package nodepath

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		path, wantErr string
	}{
		{"/", ""},
		{"/a", ""},
		{"/a/b-c/d_e/f.g/H9", ""},
		{"/.hidden", ""},
		{"", "empty path"},
		{"a/b", "must be absolute"},
		{"/a/", "must not end with /"},
		{"/a//b", "two slashes"},
		{"/a/../b", `".." is not allowed`},
		{"/a/./b", `"." is not allowed`},
		{"/a b", "names may only contain"},
		{"/a/é", "names may only contain"},
		{"/a:b", `':'`},
	} {
		err := Check(tc.path)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("Check(%q) = %v, want nil", tc.path, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Check(%q) = %v, want error containing %q", tc.path, err, tc.wantErr)
		}
	}
}

func TestHelpers(t *testing.T) {
	if got := Ancestors("/a/b/c"); !reflect.DeepEqual(got, []string{"/a", "/a/b"}) {
		t.Errorf("Ancestors = %v", got)
	}
	if Ancestors("/a") != nil {
		t.Errorf("Ancestors(/a) not empty")
	}
	for _, tc := range []struct{ p, parent, base string }{
		{"/", "", ""}, {"/a", "/", "a"}, {"/a/b", "/a", "b"},
	} {
		if Parent(tc.p) != tc.parent || Base(tc.p) != tc.base {
			t.Errorf("%q: parent %q base %q", tc.p, Parent(tc.p), Base(tc.p))
		}
		if tc.p != "/" && Join(Parent(tc.p), Base(tc.p)) != tc.p {
			t.Errorf("Join does not invert %q", tc.p)
		}
	}
	if !Within("/a/b", "/a") || Within("/ab", "/a") || !Within("/a", "/a") || !Within("/x", "/") {
		t.Errorf("Within wrong")
	}
}
