package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestFirstTopologyGuide follows docs/first-topology.md: a module of its
// own (go mod init, the replace directive toward this repository, the
// guide's main.go, go mod tidy, go build), a local run that counts the
// shouted words, then the guide's commands as written: a submission of
// the module's directory to a local cluster, whose bolts count too, the
// list, the metrics and a kill.
func TestFirstTopologyGuide(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "first-topology.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/first-topology.md has no Go code block")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("go", "mod", "init", "example.com/hello")
	run("go", "mod", "edit", "-replace", "github.com/egret-stream/egret="+repoRoot())
	run("go", "mod", "tidy")
	run("go", "build", "-o", "hello", ".")
	out := run(filepath.Join(dir, "hello"), "--local", "--duration", "2s")
	if !regexp.MustCompile(`shout\.shouted = [1-9]`).MatchString(out) {
		t.Fatalf("the local run counted nothing:\n%s", out)
	}

	// Section 4's commands, as written, from the module's directory.
	c := newCluster(t, "local")
	c.runDocLines(t, "docs/first-topology.md", dir, docBlock(t, "docs/first-topology.md", "egret submit local ."), func(line, _ string) {
		if strings.HasPrefix(line, "egret submit") {
			waitFor(t, "the submitted topology's bolts to count", 2*time.Minute, func() bool {
				return c.userCounter(t, "hello", "shout", "shouted") > 0
			})
		}
	})
	c.waitGone(t)
}
