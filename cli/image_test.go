package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestImageBadInput: egret image and egret kubernetes rbac refuse bad
// input with exit 2 and one line saying what to do, writing nothing.
func TestImageBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "img.tar")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"image", "build", "--binary", "/bin/sh"}, "say where to write the image"},
		{[]string{"image", "build", "-o", out, "--binary", "/bin/sh"}, "build egret with CGO_ENABLED=0"},
		{[]string{"image", "build", "-o", out, "--binary", "/nonexistent"}, "--binary: stat /nonexistent"},
		{[]string{"image", "build", "-o", out, "--binary", "/bin/sh", "--tag", "Bad Ref"}, `image reference "Bad Ref"`},
		{[]string{"image", "push", "Bad Ref"}, `image reference "Bad Ref"`},
		{[]string{"image", "push", "example.com/e:1", "--from", out, "--binary", "/bin/sh"}, "--from pushes a built image"},
		{[]string{"kubernetes", "rbac"}, "--subject is required"},
		{[]string{"kubernetes", "rbac", "--subject", "bob"}, "write user:NAME, group:NAME or serviceaccount:NAMESPACE:NAME"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, &stdout, &stderr)
		if code != ExitUsage || !strings.Contains(stderr.String(), c.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr.String(), ExitUsage, c.want)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "*")); len(matches) > 0 {
		t.Errorf("files written: %v", matches)
	}
}
