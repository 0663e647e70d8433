package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestViolation(t *testing.T) {
	for _, c := range []struct {
		from, to string
		want     string // a part of the rule broken; "" for none
	}{
		{"core/spi", "core/topology", ""},
		{"core/spi", "proto/egretpb", ""},
		{"core/spi", "schedulers/nomad", "core imports only"},
		{"core/state", "daemons/wire", "core imports only"},
		{"internal/hdfsx", "uploaders/http", "internal imports only"},
		{"conf", "schedulers/nomad", "conf imports only"},
		{"schedulers/nomad", "core/spi", ""},
		{"schedulers/nomad", "conf", ""},
		{"schedulers/nomad", "schedulers/internal/executorcmd", ""},
		{"schedulers/nomad/nomadtest", "schedulers/nomad", ""},
		{"schedulers/nomad", "schedulers/yarn", "no other backend"},
		{"schedulers/mesos/mesostest", "uploaders/http", "no other backend"},
		{"schedulers/mesos/mesostest", "internal/fetch", ""},
		{"uploaders/uploadertest", "uploaders/http", "no other backend"},
		{"packing/ffd", "uploaders/internal/pkgio", "another kind"},
		{"statemgr/zookeeper", "daemons/wire", "a backend imports no daemon"},
		{"checkpoints/hdfs", "plugins", "a backend imports no daemon"},
		{"daemons/stmgr", "daemons/wire", ""},
		{"daemons/shell", "daemons/shellapi", ""},
		{"tracker", "daemons/shellapi", ""},
		{"daemons/instance/gateway", "daemons/instance", ""},
		{"daemons/shell", "daemons/executor", "only through the contract packages"},
		{"daemons/wire", "daemons/stmgr", "only through the contract packages"},
		{"daemons/stmgr/stmgrtest", "daemons/instance/gateway", ""},
		{"daemons/stmgr/stmgrtest", "statemgr/memory", ""},
		{"daemons/executor", "statemgr/localfs", "a daemon imports no backend"},
		{"daemons/ckptmgr", "plugins", "a daemon imports none of"},
		{"api/streamlet", "api", ""},
		{"api/window", "daemons/instance", "api/ imports no"},
		{"api", "conf", "api/ imports no"},
		{"api/runner", "daemons/stmgr", ""},
		{"api/runner", "statemgr/localfs", "api/runner runs daemons but"},
		{"api/runner", "statebackends/pebble", ""},
		{"api/runner", "checkpoints/localfs", "api/runner runs daemons but"},
		{"launcher", "conf", ""},
		{"launcher", "api/runner", "launcher/ imports no"},
		{"launcher", "packing/ffd", "launcher/ imports no"},
		{"launcher", "core/plan/render", ""},
		{"plugins", "statemgr/zookeeper", "plugins/ imports no"},
		{"plugins/internal/fakes", "statemgr/memory", ""},
		{"tracker", "launcher", ""},
		{"tracker", "daemons/shell", "tracker/ imports no"},
		{"connectors/kafka", "api", ""},
		{"connectors/kafka", "launcher", "built on api/ only"},
		{"cli", "schedulers/nomad", ""},
		{"catalog", "schedulers/nomad", ""},
		{"schedulers/nomad", "catalog", "a backend imports no daemon"},
		{"cli", "schedulers/schedulertest", "no test suite"},
		{"bench/recovery", "test/e2e/testdata/ackcheck/ackcheck", "no test suite"},
		{"bench/harness", "daemons/stmgr", ""},
		{"examples/wordcount", "internal/kafkatest", "no test suite"},
		{"daemons/stmgr", "statemgr/memory", "no test suite"},
		{"test/e2e", "internal/zktest", ""},
	} {
		got := violation(c.from, c.to)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s → %s: got %q, want %q", c.from, c.to, got, c.want)
		}
	}
}

// writeModule writes a module of the given files (path → source) into a
// temporary directory.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module github.com/egret-stream/egret\n\ngo 1.22\n"
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDeliberateViolation runs the check, as make lint does, on a module
// where core imports a scheduler: it fails and names the import and the
// rule. Without the import, or with the import allowed, it passes; an
// allowance no import needs fails.
func TestDeliberateViolation(t *testing.T) {
	const nomad = "schedulers/nomad/nomad.go"
	files := map[string]string{
		"core/spi/spi.go": "package spi\n\nimport _ \"github.com/egret-stream/egret/schedulers/nomad\"\n",
		nomad:             "package nomad\n",
	}
	dir := writeModule(t, files)
	var out, errOut bytes.Buffer
	if code := run(dir, nil, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1; stdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if want := "layering: core/spi imports schedulers/nomad: core imports only core/, proto/ and internal/\n"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("output:\n%s\nwant first line %q", out.String(), want)
	}

	allow := []allowance{{"core/spi", "schedulers/nomad", "a test"}}
	out.Reset()
	if code := run(dir, allow, &out, &errOut); code != 0 {
		t.Errorf("with the import allowed: exit %d, output:\n%s", code, out.String())
	}

	dir = writeModule(t, map[string]string{"core/spi/spi.go": "package spi\n", nomad: "package nomad\n"})
	out.Reset()
	if code := run(dir, nil, &out, &errOut); code != 0 || out.Len() != 0 {
		t.Errorf("clean module: exit %d, output:\n%s", code, out.String())
	}
	out.Reset()
	if code := run(dir, allow, &out, &errOut); code != 1 || !strings.Contains(out.String(), "allowed core/spi → schedulers/nomad (a test) is not needed any more") {
		t.Errorf("stale allowance: exit %d, output:\n%s", code, out.String())
	}
}

// TestBrokenModule: a module go list cannot read exits 2 with go list's
// reason.
func TestBrokenModule(t *testing.T) {
	dir := writeModule(t, map[string]string{"core/spi/spi.go": "package spi\n\nimport _ \"github.com/egret-stream/egret/nowhere\"\n"})
	var out, errOut bytes.Buffer
	if code := run(dir, nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "nowhere") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}
