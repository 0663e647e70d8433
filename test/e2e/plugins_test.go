package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// egretCmd runs the egret CLI with args and the extra environment env.
func egretCmd(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t, "egret"), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return out.String(), errb.String(), code
}

// installAs links the binary of a test package into dir under file.
func installAs(t *testing.T, dir, file, bin string) string {
	t.Helper()
	p := filepath.Join(dir, file)
	if err := os.Symlink(bin, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPluginVerify certifies the example scheduler plugin from its source
// directory (egret plugin verify builds it), and fails a plugin that breaks
// the contract with the check named.
func TestPluginVerify(t *testing.T) {
	state := "egret.scheduler.example.state.file=" + filepath.Join(t.TempDir(), "cluster.json")
	example := filepath.Join(repoRoot(), "cmd", "egret-scheduler-example")
	stdout, stderr, code := egretCmd(t, nil, "plugin", "verify", example, "--config-property", state)
	if code != 0 {
		t.Fatalf("verify the example: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		`verifying scheduler plugin "example" (`,
		"PASS scheduler/Schedule (", "PASS scheduler/RestartOne (", "PASS scheduler/Update (", "PASS scheduler/Scalable (",
		"PASS scheduler/Kill (", "PASS scheduler/KillNeverScheduled (", "PASS scheduler/CancelledContext (",
		"SKIP scheduler/LostContainer: Harness.LoseContainer is not set",
		`PASS: scheduler plugin "example": 10 passed, 0 failed, 3 skipped`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the example's report lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "FAIL") {
		t.Errorf("the example's report has a FAIL line:\n%s", stdout)
	}

	// Kill is not idempotent: the report names the check, exit 1.
	dir := t.TempDir()
	broken := installAs(t, dir, "egret-scheduler-broken", binary(t, "egret-scheduler-broken"))
	stdout, stderr, code = egretCmd(t, nil, "plugin", "verify", broken, "--config-property", state)
	if code != 1 {
		t.Errorf("verify a broken plugin: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"FAIL scheduler/Kill: second Kill (must be idempotent): ", "PASS scheduler/Schedule (", `FAIL: scheduler plugin "broken": `} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the broken plugin's report lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "some checks failed") {
		t.Errorf("stderr %q", stderr)
	}

	// Bad input: exit 2 and one line.
	for _, tc := range []struct {
		what    string
		args    []string
		mention string
	}{
		{"missing binary", []string{filepath.Join(dir, "egret-scheduler-nope")}, "no such file"},
		{"unknown kind", []string{broken, "--kind", "shuffler"}, `unknown plugin kind "shuffler"`},
		{"not a plugin", []string{installAs(t, dir, "egret-uploader-true", "/bin/true")}, "is it an Egret uploader plugin"},
		{"bad config", []string{broken}, "egret.scheduler.example.state.file is required"},
		{"bad --config file", []string{broken, "--config", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
	} {
		_, stderr, code := egretCmd(t, nil, append([]string{"plugin", "verify"}, tc.args...)...)
		oneLineError(t, tc.what, stderr, code, 2, tc.mention)
	}
}

// TestPackingPluginByName selects an external packing plugin by name: the
// plugin packs (one container per component, unlike every built-in), and a
// name that is neither built in nor installed fails before anything is
// written.
func TestPackingPluginByName(t *testing.T) {
	wc := binary(t, "wordcount")
	home := t.TempDir()
	plugins := filepath.Join(home, "plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	installAs(t, plugins, "egret-packing-packonly", binary(t, "egretplugin"))
	env := []string{"EGRET_HOME=" + home}

	stdout, stderr, code := egretCmd(t, env, "config", "validate", "local", "--config-property", "egret.packing=packonly")
	if code != 0 {
		t.Errorf("validate with a packing plugin: exit %d, %s%s", code, stdout, stderr)
	}
	stdout, stderr, code = egretCmd(t, env, "submit", "local", wc, "--dry-run", "--config-property", "egret.packing=packonly")
	if code != 0 || !strings.Contains(stdout+stderr, "(packonly)") || !strings.Contains(stdout, "6 instances in 4 containers") {
		t.Errorf("dry run with the packing plugin: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	before := treeDigest(t, home)
	for _, args := range [][]string{
		{"config", "validate", "local", "--config-property", "egret.packing=plugin-ffd"},
		{"submit", "local", wc, "--config-property", "egret.packing=plugin-ffd"},
	} {
		_, stderr, code := egretCmd(t, env, args...)
		oneLineError(t, strings.Join(args[:2], " ")+" with an unknown packing", stderr, code, 2,
			`packing algorithm "plugin-ffd" is not built in`, filepath.Join(plugins, "egret-packing-plugin-ffd"))
	}
	sameTree(t, "a refused packing plugin", before, treeDigest(t, home))
}
