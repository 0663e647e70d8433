package e2e

import (
	"context"
	"errors"
	"os"
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

	// Effectively-once is not built: a cluster refuses it rather than
	// silently weakening the guarantee.
	_, stderr, code = c.egret("submit", c.name, binary(t, "effectivelyonce"))
	oneLineError(t, "effectively-once topology", stderr, code, 2, "effectively-once", "not built")

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
