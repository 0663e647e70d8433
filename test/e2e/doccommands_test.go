package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// docBlock returns the command lines of the code block of the Markdown
// file rel (relative to the repository's root) whose first command line
// starts with first: continuation lines joined, blank and comment lines
// left out. The lines run as written (see runDocLines).
func docBlock(t *testing.T, rel, first string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(), rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var block []string
	in, pending := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if in && len(block) > 0 && strings.HasPrefix(block[0], first) {
				return block
			}
			in, block = !in, nil
			continue
		}
		l := strings.TrimSpace(line)
		if !in || pending == "" && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			pending += strings.TrimSuffix(l, "\\")
			continue
		}
		block, pending = append(block, pending+l), ""
	}
	t.Fatalf("%s has no code block starting with %q", rel, first)
	return nil
}

// runDocLines runs each line with bash in dir, as a reader would type it:
// `egret` is on the PATH (the binary the tests built) and EGRET_HOME is
// the cluster's, nothing else of the tests' settings. A line that exits
// non-zero fails the test; after, when not nil, sees each line's output.
func (c *cluster) runDocLines(t *testing.T, where, dir string, lines []string, after func(line, out string)) {
	t.Helper()
	bin := t.TempDir()
	if err := os.Symlink(binary(t, "egret"), filepath.Join(bin, "egret")); err != nil {
		t.Fatal(err)
	}
	for _, line := range lines {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "EGRET_HOME="+c.home, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: `%s`: %v\n%s", where, line, err, out)
		}
		t.Logf("%s: `%s`:\n%s", where, line, out)
		if after != nil {
			after(line, string(out))
		}
	}
}

// TestReadmeClusterCommands runs the README's "Running on a cluster" block
// as written, from the repository's root, on a local cluster of its own
// (its EGRET_HOME): every line exits 0, the topology is listed, the update
// leaves the count bolt with 4 tasks, and the kill leaves no process.
func TestReadmeClusterCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds egret and runs a local topology")
	}
	c := newCluster(t, "local")
	lines := docBlock(t, "README.md", "go build -o bin/egret ./cmd/egret")
	if len(lines) < 6 {
		t.Fatalf("README's block has %d lines: %q", len(lines), lines)
	}
	c.runDocLines(t, "README.md", repoRoot(), lines, func(line, out string) {
		switch {
		case strings.Contains(line, " list local"):
			if !strings.Contains(out, "wordcount") {
				t.Errorf("`%s` does not list wordcount:\n%s", line, out)
			}
		case strings.Contains(line, "--component-parallelism count:4"):
			pp, _, err := c.store().PackingPlan(context.Background(), "wordcount")
			if err != nil {
				t.Fatalf("after `%s`: %v", line, err)
			}
			if n := len(pp.Layout().Tasks["count"]); n != 4 {
				t.Errorf("after `%s` count runs %d tasks, want 4", line, n)
			}
		}
	})
	c.waitGone(t)
}
