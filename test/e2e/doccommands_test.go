package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/internal/doccmd"
	"github.com/egret-stream/egret/internal/zktest"
)

// docBlock returns the lines of rel's code block whose first line starts
// with first (doccmd.Block), rel relative to the repository's root.
func docBlock(t *testing.T, rel, first string) []string {
	t.Helper()
	lines, err := doccmd.Block(filepath.Join(repoRoot(), rel), first)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return lines
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

// docSubstitutes are the illustrative topology paths of the docs, run as
// the example they stand for.
var docSubstitutes = map[string]string{
	"./mytopology": "./examples/wordcount",
	"./wordcount":  "./examples/wordcount",
	".":            "./examples/wordcount", // first-topology.md, from the reader's module
	"./nexmark":    "./examples/nexmark",   // the binary the line before builds
}

// docRefusals are the doc lines that name what a fresh machine lacks (a
// savepoint taken earlier, an image built earlier, the reader's own
// topology or kubeconfig): each must be refused with its message, which
// no flag or syntax error has.
var docRefusals = []struct{ line, err string }{
	{"--from-savepoint ", "no savepoint at"},
	{"savepoints describe local /backups/", "no savepoint at"},
	{"savepoints delete local /backups/", "no savepoint at"},
	{"--from egret.tar", "open egret.tar: no such file"},
	{"--binary bin/egret-linux-amd64", "bin/egret-linux-amd64: no such file"},
	{"./cmd/orders", "./cmd/orders does not exist"},
	{"--kubeconfig ~/.kube/config", "no usable kubeconfig"},
}

// docServers are the commands that serve until stopped: one that still
// runs after a few seconds accepted its command line.
var docServers = map[string]bool{"serve-packages": true, "tracker": true}

// TestDocCommandLinesRun runs every egret command line that README.md and
// docs/ show in code blocks, with the real CLI, as a reader on a fresh
// machine would: the clusters as written (their state in a real
// ZooKeeper, a "prod" cluster defined as the local one), submits as dry
// runs (nothing is launched). A line fails the test when the CLI refuses
// it as bad input (exit 2) other than for what a fresh machine lacks
// (docRefusals), panics, or hangs; a failure of the cluster behind it
// (exit 1: no such topology, nothing listening) is what a fresh machine
// answers. TestDocCommandLines (cli) parses the inline spans as well.
func TestDocCommandLinesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs every documented command line")
	}
	zk := zktest.Start(t)
	home, egretHome := t.TempDir(), t.TempDir()
	conf := filepath.Join(home, ".egret", "conf")
	for _, cl := range []string{"localzk", "mesos", "slurm", "kubernetes", "yarn", "aurora", "nomad"} {
		writeFile(t, filepath.Join(conf, cl, "statemgr.yaml"), "egret.statemgr.connection.string: "+zk+"\n")
	}
	local, err := filepath.Glob(filepath.Join(repoRoot(), "conf", "clusters", "local", "*.yaml"))
	if err != nil || len(local) == 0 {
		t.Fatalf("the local cluster's files: %v", err)
	}
	for _, f := range local {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(conf, "prod", filepath.Base(f)), string(b))
	}
	// The reader's own Go caches: HOME is the test's, and the default
	// caches under it would rebuild everything.
	goEnv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	env := []string{"HOME=" + home, "EGRET_HOME=" + egretHome}
	for i, v := range strings.Fields(string(goEnv)) {
		env = append(env, []string{"GOCACHE", "GOMODCACHE", "GOPATH"}[i]+"="+v)
	}
	files, err := doccmd.Files(repoRoot())
	if err != nil {
		t.Fatal(err)
	}
	ran, refused := 0, 0
	for _, f := range files {
		rel, _ := filepath.Rel(repoRoot(), f)
		cmds, err := doccmd.Commands(f, rel)
		if err != nil {
			t.Fatal(err)
		}
		for _, dc := range cmds {
			if !dc.Full || doccmd.Synopsis(dc.Line) {
				continue
			}
			for _, args := range doccmd.Split(dc.Line) {
				for i, a := range args {
					if s, ok := docSubstitutes[a]; ok {
						args[i] = s
					} else if rest, ok := strings.CutPrefix(a, "~/"); ok {
						args[i] = filepath.Join(home, rest)
					}
				}
				if len(args) > 0 && args[0] == "submit" && !slices.Contains(args, "--dry-run") {
					args = append([]string{"submit", "--dry-run"}, args[1:]...)
				}
				began := time.Now()
				code, out := runDocCommand(t, env, args)
				if took := time.Since(began); took > 5*time.Second {
					t.Logf("%s: `egret %s` took %s (exit %d)", dc.Where, strings.Join(args, " "), took.Round(time.Second), code)
				}
				ran++
				line := "egret " + strings.Join(args, " ")
				want := ""
				for _, r := range docRefusals {
					if strings.Contains(dc.Line, r.line) {
						want = r.err
					}
				}
				switch {
				case strings.Contains(out, "panic:") || strings.Contains(out, "goroutine "):
					t.Errorf("%s: `%s` panicked:\n%s", dc.Where, line, out)
				case code == -1:
					t.Errorf("%s: `%s` did not end in time:\n%s", dc.Where, line, out)
				case want != "":
					refused++
					if code != 2 || !strings.Contains(out, want) {
						t.Errorf("%s: `%s`: exit %d, want 2 with %q (what a fresh machine lacks):\n%s", dc.Where, line, code, want, out)
					}
				case code == 2:
					t.Errorf("%s: `%s` is refused as bad input:\n%s", dc.Where, line, out)
				}
			}
		}
	}
	if ran < 60 {
		t.Errorf("only %d command lines ran", ran)
	}
	t.Logf("%d egret command lines of the docs ran (%d refused for what this machine lacks)", ran, refused)
}

// runDocCommand runs egret with args from the repository's root, with env
// added to the environment, and
// returns its exit code (-1: it did not end in time; 0 for a server still
// serving after a few seconds) and output.
func runDocCommand(t *testing.T, env, args []string) (int, string) {
	t.Helper()
	limit := 5 * time.Minute // a dry run builds the topology
	server := len(args) > 0 && docServers[args[0]]
	if server {
		limit = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t, "egret"), args...)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil && server:
		return 0, string(out)
	case ctx.Err() != nil:
		return -1, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	case err != nil:
		t.Fatalf("egret %s: %v", strings.Join(args, " "), err)
	}
	return 0, string(out)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
