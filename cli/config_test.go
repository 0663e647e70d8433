package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// egret runs the command in-process and returns its exit code, stdout and
// stderr.
func egret(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return egretCtx(context.Background(), args...)
}

// egretCtx is egret with a context that ends the command.
func egretCtx(ctx context.Context, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// isolate gives the test its own EGRET_HOME and a config path holding the
// given files (relative to it); it returns both.
func isolate(t *testing.T, files map[string]string) (home, configPath string) {
	t.Helper()
	home, configPath = t.TempDir(), t.TempDir()
	t.Setenv("EGRET_HOME", home)
	for name, body := range files {
		p := filepath.Join(configPath, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home, configPath
}

// tree lists every path below dir.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// borgCluster is a user-defined cluster selecting a scheduler that is not
// built in.
var borgCluster = map[string]string{
	"borg/scheduler.yaml": "# no such backend\negret.scheduler: borg\n",
	"borg/statemgr.yaml":  "egret.statemgr: localfs\negret.statemgr.root.path: ${EGRET_HOME}/state/borg\n",
	"borg/uploader.yaml":  "egret.uploader: localfs\n",
}

func TestConfigValidateUnknownBackend(t *testing.T) {
	home, cp := isolate(t, borgCluster)
	code, stdout, stderr := egret(t, "config", "validate", "borg", "--config-path", cp)
	plugin := filepath.Join(home, "plugins", "egret-scheduler-borg")
	want := "egret: " + filepath.Join(cp, "borg", "scheduler.yaml") + `:2: egret.scheduler: scheduler "borg" is not built in (built in: [aurora kubernetes local mesos nomad slurm yarn]) and there is no plugin binary ` +
		plugin + ": unknown backend (install the plugin there, or set egret.plugin.directory to its directory)\n"
	if code != ExitUsage || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr:\n %q\nwant exit 2 and\n %q", code, stdout, stderr, want)
	}

	// A packing algorithm that does not exist, given on the command line.
	code, _, stderr = egret(t, "config", "validate", "local", "--config-path", cp, "--config-property", "egret.packing=spiral")
	if code != ExitUsage || !strings.Contains(stderr, `--config-property: egret.packing: packing algorithm "spiral" is not built in`) {
		t.Errorf("unknown packing: exit %d, %q", code, stderr)
	}

	// Installed as a plugin binary, the name is found and the plugin is
	// asked for its config keys (cmd/egret-scheduler-example's
	// TestDeclaresItsKeys: a real plugin); one that cannot start is
	// reported on the selecting key.
	if err := os.MkdirAll(filepath.Dir(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = egret(t, "config", "validate", "borg", "--config-path", cp)
	if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "scheduler.yaml:2: egret.scheduler: the scheduler plugin borg cannot tell its config keys: start plugin "+plugin) {
		t.Errorf("with a broken plugin installed: exit %d, %q, %q", code, stdout, stderr)
	}
}

// TestSubmitUnknownBackendTouchesNothing: submit fails on the config before
// it builds, defines or uploads anything.
func TestSubmitUnknownBackendTouchesNothing(t *testing.T) {
	home, cp := isolate(t, borgCluster)
	before := tree(t, home)
	code, _, stderr := egret(t, "submit", "borg", "./no/such/topology", "--config-path", cp)
	if code != ExitUsage || !strings.Contains(stderr, `scheduler "borg" is not built in`) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want exit 2 and one line about the scheduler", code, stderr)
	}
	if after := tree(t, home); !slices.Equal(before, after) {
		t.Errorf("EGRET_HOME changed: %v -> %v", before, after)
	}
}

func TestConfigClustersListsOnlyUsableClusters(t *testing.T) {
	_, cp := isolate(t, borgCluster)
	code, stdout, _ := egret(t, "config", "clusters", "--config-path", cp)
	if code != ExitOK || stdout != "aurora\nborg\nkubernetes\nlocal\nlocalzk\nmesos\nnomad\nslurm\nyarn\n" {
		t.Errorf("exit %d, clusters %q", code, stdout)
	}
	code, _, stderr := egret(t, "config", "validate", "pbs", "--config-path", cp)
	if code != ExitUsage || !strings.Contains(stderr, `cluster "pbs": unknown cluster (known clusters: aurora, borg, kubernetes, local, localzk, mesos, nomad, slurm, yarn;`) {
		t.Errorf("validate pbs: exit %d, %q", code, stderr)
	}
}

// TestUpdateRuntimeConfigTypeChecked: a runtime setting of the wrong type
// is refused before the state manager or the topology manager is reached.
func TestUpdateRuntimeConfigTypeChecked(t *testing.T) {
	home, cp := isolate(t, nil)
	for _, tc := range []struct{ setting, want string }{
		{"topology.max.spout.pending=abc", `egret: runtime setting topology.max.spout.pending: "abc" is not an integer` + "\n"},
		{"topology.message.timeout=30", `egret: runtime setting topology.message.timeout: "30" is not a duration (for example 500ms, 30s)` + "\n"},
		{"topology.containers=2", "egret: runtime setting topology.containers cannot change in a running topology: it shapes the packing plan (the containers and their resources), fixed at submission; " +
			"egret update --container-number changes the number of containers, anything else needs a kill and a new submission\n"},
		{"topology.debug=true", "egret: runtime setting topology.debug: fixed when the topology is submitted, it does not change live; add --restart to apply it by a rolling restart of containers 1..N " +
			"(the runtime config changes topology.max.spout.pending, topology.message.timeout, topology.tick.tuple.freq and user settings live)\n"},
	} {
		code, _, stderr := egret(t, "update", "local", "wc", "--runtime-config", tc.setting, "--runtime-config", "count.rate=5", "--config-path", cp)
		if code != ExitUsage || stderr != tc.want {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", tc.setting, code, stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("EGRET_HOME holds %v after refused updates", entries)
	}
}

// TestUpdateRestartCheckedFirst: egret update --restart refuses, before
// the state manager or the topology manager is reached, a setting that
// cannot change in a running topology even with a restart (with the
// reason), an invalid value, and a rescale in the same command.
func TestUpdateRestartCheckedFirst(t *testing.T) {
	home, cp := isolate(t, nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--runtime-config", "topology.delivery.mode=at-most-once"}, "setting topology.delivery.mode cannot change in a running topology, not even with --restart: the delivery mode is the topology's contract"},
		{[]string{"--runtime-config", "topology.component.ram=2GiB"}, "setting topology.component.ram cannot change in a running topology, not even with --restart: it shapes the packing plan"},
		{[]string{"--runtime-config", "topology.stateful.checkpoint.interval=1s"}, "it changes the checkpoint semantics"},
		{[]string{"--runtime-config", "topology.multilang.heartbeat.timeout=soon"}, `setting topology.multilang.heartbeat.timeout: "soon" is not a duration`},
		{[]string{"--runtime-config", "topology.debugg=true"}, "setting topology.debugg: unknown topology setting"},
		{[]string{"--runtime-config", "topology.debug=true", "--component-parallelism", "count:2"}, "--restart applies runtime settings: rescale in another egret update"},
		{[]string{"--container-number", "2"}, "--restart needs the settings to apply"},
	} {
		code, _, stderr := egret(t, append(append([]string{"update", "local", "wc", "--restart"}, tc.args...), "--config-path", cp)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("update --restart %s: exit %d, stderr %q; want exit 2 and one line with %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("EGRET_HOME holds %v after refused updates", entries)
	}
}

// TestConfigUnknownEgretKey (issue 40): a misspelled egret.* key is bad
// input wherever it comes from, named with the nearest known key, and
// submit refuses it before it builds anything.
func TestConfigUnknownEgretKey(t *testing.T) {
	_, cp := isolate(t, map[string]string{"local/internals.yaml": "egret.stmgr.buffer.max.byte: 1MiB\n"})
	code, stdout, stderr := egret(t, "--config-property", "egret.no.such.key=1", "config", "validate", "local", "--config-path", t.TempDir())
	if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "egret.no.such.key: unknown key (no built-in or selected backend reads it); did you mean egret.") {
		t.Errorf("flag: exit %d, %q, %q", code, stdout, stderr)
	}
	code, _, stderr = egret(t, "config", "validate", "local", "--config-path", cp)
	if code != ExitUsage || !strings.Contains(stderr, filepath.Join(cp, "local", "internals.yaml")+":1: egret.stmgr.buffer.max.byte: unknown key; did you mean egret.stmgr.buffer.max.bytes?") {
		t.Errorf("override file: exit %d, %q", code, stderr)
	}
	code, stdout, stderr = egret(t, "--config-property", "egret.lsf.queue=1", "submit", "local", "./no-such-package", "--config-path", t.TempDir())
	if code != ExitUsage || !strings.Contains(stderr, "egret.lsf.queue: unknown key") || strings.Contains(stdout+stderr, "build") {
		t.Errorf("submit: exit %d, %q, %q", code, stdout, stderr)
	}
}
