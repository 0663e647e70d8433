package verify_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/cmd/egret-scheduler-example/example"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/plugins/verify"
)

const (
	examplePkg = "../../cmd/egret-scheduler-example"
	brokenPkg  = "../testdata/egret-scheduler-broken"
	packingPkg = "../testdata/egret-packing-builtins"
	localfsPkg = "../testdata/egret-statemgr-localfs"
	multiPkg   = "../testdata/egretplugin"
	sinkPkg    = "../testdata/egret-metricssink-jsonl"
	ckptPkg    = "../testdata/egret-checkpointstorage-localfs"
)

func TestMain(m *testing.M) {
	plugintest.Main(m, examplePkg, brokenPkg, packingPkg, localfsPkg, multiPkg, sinkPkg, ckptPkg)
}

// install puts the binary of pkg into a fresh directory as
// egret-<kind>-<name>.
func install(t *testing.T, pkg, kind, name string) string {
	t.Helper()
	return plugintest.Install(t, t.TempDir(), kind, name, plugintest.Build(t, pkg))
}

func run(t *testing.T, o verify.Options) (*verify.Report, string, error) {
	t.Helper()
	var out bytes.Buffer
	o.Out = &out
	if o.StartTimeout == 0 {
		o.StartTimeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := verify.Run(ctx, o)
	return rep, out.String(), err
}

func stateFile(t *testing.T) spi.Config {
	return spi.Config{example.KeyStateFile: filepath.Join(t.TempDir(), "cluster.json")}
}

func contains(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
}

func TestExampleSchedulerPasses(t *testing.T) {
	bin := install(t, examplePkg, spi.KindScheduler, "example")
	rep, out, err := run(t, verify.Options{Path: bin, Config: stateFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Kind != spi.KindScheduler || rep.Name != "example" {
		t.Errorf("report %+v, want a passing scheduler example:\n%s", rep, out)
	}
	contains(t, out, "PASS scheduler/Schedule (", "PASS scheduler/Kill (", "PASS scheduler/CancelledContext (",
		"SKIP scheduler/LostContainer: ", `PASS: scheduler plugin "example": 10 passed, 0 failed, 3 skipped`)
}

// A directory is a main package, built first; its name gives kind and name.
func TestDirectoryIsBuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example plugin with go build (-short)")
	}
	rep, out, err := run(t, verify.Options{Path: examplePkg, Config: stateFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Name != "example" {
		t.Errorf("report %+v:\n%s", rep, out)
	}
}

// A scheduler whose Kill is not idempotent fails the checks that say so.
func TestBrokenSchedulerFails(t *testing.T) {
	bin := install(t, brokenPkg, spi.KindScheduler, "broken")
	rep, out, err := run(t, verify.Options{Path: bin, Config: stateFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Fatalf("a non-idempotent Kill passed:\n%s", out)
	}
	contains(t, out, "FAIL scheduler/Kill: second Kill (must be idempotent): ", "FAIL scheduler/KillNeverScheduled: ",
		"PASS scheduler/Schedule (", `FAIL: scheduler plugin "broken": `)
}

// A plugin that crashes during a check fails that check with a one-line
// reason, and the following checks still run.
func TestCrashingSchedulerFails(t *testing.T) {
	bin := install(t, brokenPkg, spi.KindScheduler, "crashy")
	rep, out, err := run(t, verify.Options{Path: bin, Config: stateFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Fatalf("a crashing Restart passed:\n%s", out)
	}
	contains(t, out, "FAIL scheduler/RestartOne: Restart(1): ", "plugin exited", "PASS scheduler/Kill (")
}

// A scheduler plugin without an observer cannot be checked.
func TestSchedulerWithoutObserver(t *testing.T) {
	bin := install(t, multiPkg, spi.KindScheduler, "basic")
	rep, out, err := run(t, verify.Options{Path: bin})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Fatalf("a scheduler without observer passed:\n%s", out)
	}
	contains(t, out, "FAIL scheduler/Observer: ", "plugins.WithObserver")
}

func TestOtherKinds(t *testing.T) {
	for _, tc := range []struct {
		pkg, kind, name string
		cfg             spi.Config
		summary         string
	}{
		{packingPkg, spi.KindPacking, "plugin-ffd", nil, `PASS: packing plugin "plugin-ffd": 36 passed, 0 failed, 0 skipped`},
		{localfsPkg, spi.KindStateManager, "localfs", spi.Config{"egret.statemgr.session.timeout": "1s"}, `PASS: statemgr plugin "localfs": 30 passed, 0 failed, 0 skipped`},
		{multiPkg, spi.KindUploader, "fs", nil, `PASS: uploader plugin "fs": 11 passed, 0 failed, 1 skipped`},
		{sinkPkg, spi.KindMetricsSink, "jsonl", spi.Config{"egret.metrics.jsonl.path": filepath.Join(t.TempDir(), "m.jsonl")}, `PASS: metricssink plugin "jsonl": 7 passed, 0 failed, 0 skipped`},
		// Corrupt skips: verify has no hook to damage a plugin's bytes.
		{ckptPkg, spi.KindCheckpointStorage, "disk", spi.Config{"egret.checkpoint.localfs.root": t.TempDir()}, `PASS: checkpointstorage plugin "disk": 16 passed, 0 failed, 1 skipped`},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			cfg := spi.Config{
				"egret.statemgr.root.path":         t.TempDir(),
				"egret.uploader.localfs.directory": t.TempDir(),
			}
			for k, v := range tc.cfg {
				cfg[k] = v
			}
			bin := install(t, tc.pkg, tc.kind, tc.name)
			rep, out, err := run(t, verify.Options{Path: bin, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Errorf("failed:\n%s", out)
			}
			contains(t, out, tc.summary)
		})
	}
}

// The kind of a binary whose name does not tell it is asked of the plugin;
// --kind names it and wins over the name.
func TestKind(t *testing.T) {
	mine := filepath.Join(t.TempDir(), "my-scheduler")
	if err := os.Symlink(plugintest.Build(t, brokenPkg), mine); err != nil {
		t.Fatal(err)
	}
	rep, out, err := run(t, verify.Options{Path: mine, Config: stateFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kind != spi.KindScheduler || rep.Name != "my-scheduler" {
		t.Errorf("kind %q, name %q; want scheduler, my-scheduler:\n%s", rep.Kind, rep.Name, out)
	}

	named := plugintest.Install(t, t.TempDir(), spi.KindPacking, "plugin-rcrr", plugintest.Build(t, packingPkg))
	rep, out, err = run(t, verify.Options{Path: named, Kind: spi.KindPacking})
	if err != nil || !rep.OK() || rep.Name != "plugin-rcrr" {
		t.Errorf("--kind packing: %v %+v\n%s", err, rep, out)
	}

	// An uploader verified as a packing plugin does not serve Packing.
	uploader := install(t, multiPkg, spi.KindUploader, "fs")
	_, _, err = run(t, verify.Options{Path: uploader, Kind: spi.KindPacking})
	if !errors.Is(err, verify.ErrBadInput) || !strings.Contains(err.Error(), "packing") {
		t.Errorf("an uploader verified as packing: %v", err)
	}

	// A program that serves none of Egret's services.
	_, _, err = run(t, verify.Options{Path: filepath.Join(t.TempDir(), "none")})
	if !errors.Is(err, verify.ErrBadInput) {
		t.Errorf("missing: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notExec := filepath.Join(dir, "egret-scheduler-notexec")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	exampleBin := install(t, examplePkg, spi.KindScheduler, "example")
	for _, tc := range []struct {
		name    string
		o       verify.Options
		mention []string
	}{
		{"missing", verify.Options{Path: filepath.Join(dir, "egret-scheduler-missing")}, []string{"egret-scheduler-missing", "no such file"}},
		{"not executable", verify.Options{Path: notExec}, []string{"not executable"}},
		{"unknown kind", verify.Options{Path: exampleBin, Kind: "bogus"}, []string{`unknown plugin kind "bogus"`}},
		{"not a plugin", verify.Options{Path: script("egret-scheduler-exits", "exit 0")}, []string{"is it an Egret scheduler plugin"}},
		{"prints a message", verify.Options{Path: script("egret-scheduler-talks", "echo hello")}, []string{"Unrecognized remote plugin message: hello"}},
		{"hangs", verify.Options{Path: script("egret-scheduler-hangs", "exec sleep 60"), StartTimeout: time.Second}, []string{"no handshake before the deadline"}},
		{"bad config", verify.Options{Path: exampleBin}, []string{example.KeyStateFile + " is required"}},
		{"no go files", verify.Options{Path: dir + "/empty"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "no go files" {
				if err := os.MkdirAll(tc.o.Path, 0o755); err != nil {
					t.Fatal(err)
				}
				tc.mention = []string{"directory without Go files"}
			}
			rep, out, err := run(t, tc.o)
			if !errors.Is(err, verify.ErrBadInput) {
				t.Fatalf("error %v (report %+v, output %q), want bad input", err, rep, out)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error has several lines: %q", err)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestParseBinaryName(t *testing.T) {
	for in, want := range map[string][2]string{
		"/x/egret-scheduler-example": {"scheduler", "example"},
		"egret-packing-plugin-ffd":   {"packing", "plugin-ffd"},
		"egret-statemgr-zk":          {"statemgr", "zk"},
		"egret-bogus-x":              {"", ""},
		"egret-scheduler-":           {"", ""},
		"scheduler-x":                {"", ""},
	} {
		k, n, ok := verify.ParseBinaryName(in)
		if k != want[0] || n != want[1] || ok != (want[0] != "") {
			t.Errorf("ParseBinaryName(%q) = %q, %q, %v; want %q, %q", in, k, n, ok, want[0], want[1])
		}
	}
}
