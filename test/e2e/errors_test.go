package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/spi"
)

// oneLineError checks a failed command: the exit code, and a single line
// on stderr that names the problem.
func oneLineError(t *testing.T, what string, stderr string, code, wantCode int, mentions ...string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("%s: exit code %d, want %d (stderr %q)", what, code, wantCode, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 {
		t.Errorf("%s: %d lines on stderr, want one:\n%s", what, len(lines), stderr)
	}
	for _, m := range mentions {
		if !strings.Contains(stderr, m) {
			t.Errorf("%s: stderr does not mention %q:\n%s", what, m, stderr)
		}
	}
}

func init() { packages["effectivelyonce"] = "./test/e2e/testdata/effectivelyonce" }

func TestSubmitErrors(t *testing.T) {
	c := newCluster(t, "local")
	wc := binary(t, "wordcount")

	_, stderr, code := c.egret("submit", "nosuchcluster", wc)
	oneLineError(t, "unknown cluster", stderr, code, 2, "nosuchcluster", "known clusters")

	_, stderr, code = c.egret("submit", c.name, filepath.Join(t.TempDir(), "missing"))
	oneLineError(t, "missing binary", stderr, code, 2, "missing", "does not exist")

	_, stderr, code = c.egret("--config-property", "egret.packing", "submit", c.name, wc)
	oneLineError(t, "malformed --config-property", stderr, code, 2, "egret.packing", "key=value")

	// The in-process runner does not checkpoint: it refuses an
	// effectively-once topology rather than silently weakening the
	// guarantee.
	cmd := exec.Command(binary(t, "effectivelyonce"), "--local", "--duration", "5s")
	var out strings.Builder
	cmd.Stderr = &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("effectivelyonce --local: %v, want a failure\n%s", err, out.String())
	}
	oneLineError(t, "effectively-once topology in the in-process runner", out.String(), ee.ExitCode(), 1, "effectively-once", "egret submit")

	_, stderr, code = c.egret("--config-property", "egret.statemgr.rot.path=/x", "submit", c.name, wc)
	oneLineError(t, "unknown config key", stderr, code, 2, "egret.statemgr.rot.path", "did you mean egret.statemgr.root.path")

	// An uploader failing during submit leaves no state behind: the
	// uploader's directory is a file, so it cannot write there.
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = c.egret("--config-property", "egret.uploader.localfs.directory="+blocker+"/x", "submit", c.name, wc)
	if code != 1 || !strings.Contains(stderr, "upload") {
		t.Errorf("failing uploader: exit %d, stderr %q", code, stderr)
	}
	if _, err := c.store().Topology(context.Background(), "wordcount"); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("a failed upload left state behind: %v", err)
	}

	// A launch that fails (the scheduler service cannot start) undoes the
	// state and the upload.
	_, stderr, code = c.egret("--config-property", "egret.scheduler.local.egret.binary=/nonexistent/egret", "submit", c.name, wc)
	if code != 1 || !strings.Contains(stderr, "launch") {
		t.Errorf("failing launch: exit %d, stderr %q", code, stderr)
	}
	if _, err := c.store().Topology(context.Background(), "wordcount"); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("a failed launch left state behind: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(c.home, "repository", "topologies", c.name, "*", "wordcount", "*")); len(m) > 0 {
		t.Errorf("a failed launch left the package behind: %v", m)
	}

	// Submitting a name that already runs is refused and changes nothing.
	c.mustEgret("submit", c.name, wc, "--", "--sentences", "100")
	before, _, err := c.store().PackingPlan(context.Background(), "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code = c.egret("submit", c.name, wc)
	oneLineError(t, "name already running", stderr, code, 1, "wordcount", "already running")
	after, _, err := c.store().PackingPlan(context.Background(), "wordcount")
	if err != nil || after.TopologyID != before.TopologyID {
		t.Errorf("the refused submit changed the running topology: %v %v", err, after)
	}

	// Operations on a topology that does not run.
	_, stderr, code = c.egret("activate", c.name, "nosuchtopology")
	oneLineError(t, "activate unknown topology", stderr, code, 1, "nosuchtopology", "not running")
	_, stderr, code = c.egret("update", c.name, "wordcount", "--component-parallelism", "count")
	oneLineError(t, "malformed --component-parallelism", stderr, code, 2, "component:count")
	_, stderr, code = c.egret("update", c.name, "wordcount", "--component-parallelism", "nosuch:3")
	oneLineError(t, "update unknown component", stderr, code, 2, "nosuch") // bad input, refused before any change

	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
}

func init() { packages["panicdefine"] = "./test/e2e/testdata/panicdefine" }

// hintedError checks a failed command that prints its error in one line
// and a hint in a second line.
func hintedError(t *testing.T, what string, stderr string, code, wantCode int, hint string, mentions ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "hint: ") || !strings.Contains(lines[1], hint) {
		t.Errorf("%s: want an error line and a hint mentioning %q:\n%s", what, hint, stderr)
		return
	}
	oneLineError(t, what, lines[0], code, wantCode, mentions...)
}

// TestSubmitMessages: what submit says when the topology binary panics,
// hangs, is not a binary or gets an argument it does not know, and after
// --deploy-deactivated.
func TestSubmitMessages(t *testing.T) {
	c := newCluster(t, "local")

	// A panic before runner.Main: its value and where, not the stack trace.
	_, stderr, code := c.egret("submit", c.name, binary(t, "panicdefine"))
	hintedError(t, "panic in main", stderr, code, 2, "to see the stack trace",
		"crashed while defining its topology: no brokers configured", "main.brokers at ", "panicdefine/main.go:")

	// A binary that never defines its topology is stopped after
	// --define-timeout, and submit says so.
	hang := filepath.Join(t.TempDir(), "hang")
	if err := os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = c.egret("submit", "--define-timeout", "2s", c.name, hang)
	hintedError(t, "hanging binary", stderr, code, 1, "--define-timeout", "did not define its topology within 2s and was killed")
	_, stderr, code = c.egret("submit", "--define-timeout", "0s", c.name, hang)
	oneLineError(t, "--define-timeout 0", stderr, code, 2, "--define-timeout 0s must be positive")

	_, stderr, code = c.egret("submit", c.name, t.TempDir())
	oneLineError(t, "directory without Go files", stderr, code, 2, "is a directory without Go files")

	// Arguments after -- the topology does not know are refused.
	wc := binary(t, "wordcount")
	_, stderr, code = c.egret("submit", c.name, wc, "--", "--nosuchflag", "1")
	oneLineError(t, "unknown topology flag", stderr, code, 2, "has no flag -nosuchflag")
	_, stderr, code = c.egret("submit", c.name, wc, "--", "--sentences", "10", "extra")
	oneLineError(t, "extra topology argument", stderr, code, 2, `takes no argument "extra"`)
	if names, err := c.store().Topologies(context.Background()); err != nil || len(names) > 0 {
		t.Errorf("refused submissions left state: %v %v", names, err)
	}

	out := c.mustEgret("submit", "--deploy-deactivated", c.name, wc, "--", "--sentences", "10")
	if strings.Contains(out, "is running") || !strings.Contains(out, `topology "wordcount" is deployed, deactivated`) ||
		!strings.Contains(out, "with 2 containers, deactivated") {
		t.Errorf("submit --deploy-deactivated says:\n%s", out)
	}
	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
}
