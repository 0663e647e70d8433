package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// packages maps the binaries tests use to their Go packages.
var packages = map[string]string{
	"egret":     "./cmd/egret",
	"wordcount": "./examples/wordcount",
	"windowed":  "./examples/windowed",
	// plugin binaries for the plugin tests (plugins_test.go)
	"egretplugin":             "./plugins/testdata/egretplugin",
	"egret-scheduler-broken":  "./plugins/testdata/egret-scheduler-broken",
	"egret-metricssink-jsonl": "./plugins/testdata/egret-metricssink-jsonl",
	// the checkpoint manager's plugin storage (ckptmgr_test.go)
	"egret-checkpointstorage-localfs": "./plugins/testdata/egret-checkpointstorage-localfs",
}

// binaries are built once per test run, on first use.
var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]string{}
	// variants are binaries of a package built with -ldflags, by name
	// (see taggedAckcheckSetting).
	variants = map[string]variant{}
)

// variant is a binary of pkg linked with ldflags.
type variant struct{ pkg, ldflags string }

func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// binary returns the path of a binary built from a package of the
// repository (see packages).
func binary(t *testing.T, name string) string {
	t.Helper()
	return build(t, name, "")
}

// build builds a binary of packages once per test run, into
// <buildDir>/<sub>/<name>, with the environment env.
func build(t *testing.T, name, sub string, env ...string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	key := filepath.Join(sub, name)
	if p, ok := built[key]; ok {
		return p
	}
	pkg, ok := packages[name]
	v, isVariant := variants[name]
	if isVariant {
		pkg = v.pkg
	} else if !ok {
		t.Fatalf("no package for binary %q", name)
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "egret-e2e-bin-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = dir
	}
	out := filepath.Join(buildDir, key)
	cmd := exec.Command("go", "build", "-o", out, "-ldflags", v.ldflags, pkg)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	built[key] = out
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// cluster is one test's Egret installation: its own EGRET_HOME.
type cluster struct {
	t     *testing.T
	name  string
	home  string
	zk    string // ZooKeeper address of a localzk cluster
	props []string
	env   []string // extra environment of the CLI (wins over the test's)
	// wrap runs the CLI through a command (its arguments, then egret's
	// path and arguments are appended): see k8sCluster.
	wrap []string
	// roots are directories outside home under which the cluster's
	// resource manager runs the topologies' processes (a Nomad agent's
	// data directory, the YARN node managers' local directories).
	roots []string
	// leftovers, when set, lists what the resource manager still holds of
	// a killed topology (jobs, tasks, files); nil for local clusters.
	leftovers func(t *testing.T, topology string) []string
	// static: the topologies run where there is no C library (in pods of
	// egret's image), so their binaries are built with CGO_ENABLED=0.
	static bool
	// pods, when set, finds the processes of a cluster whose containers
	// run in pods (see podProcs).
	pods *podProcs
}

func newCluster(t *testing.T, name string, props ...string) *cluster {
	home, err := os.MkdirTemp("", "egret-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, name: name, home: home, props: append([]string{
		"egret.scheduler.local.egret.binary=" + binary(t, "egret"),
		"egret.metrics.export.interval=500ms",
		"egret.executor.restart.backoff.initial=200ms",
		"egret.executor.restart.backoff.max=2s",
		"egret.tmanager.heartbeat.timeout=3s",
	}, props...)}
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs()
		}
		c.killAll()
		if !t.Failed() {
			os.RemoveAll(home)
		} else {
			t.Logf("EGRET_HOME kept for inspection: %s", home)
		}
	})
	return c
}

// bin returns the path of a topology's binary built for the cluster's
// containers (see binary).
func (c *cluster) bin(t *testing.T, name string) string {
	t.Helper()
	if c.static {
		return staticBinary(t, name)
	}
	return binary(t, name)
}

// egret runs the egret CLI and returns its output and exit code.
func (c *cluster) egret(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	full := []string{}
	for _, p := range c.props {
		full = append(full, "--config-property", p)
	}
	full = append(full, args...)
	// A submit that bundles egret into its package compresses ~100 MB:
	// minutes of a core on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	argv := append(append(slices.Clone(c.wrap), binary(c.t, "egret")), full...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "EGRET_HOME="+c.home), c.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return out.String(), errb.String(), code
}

// mustEgret runs the CLI and fails the test unless it succeeds.
func (c *cluster) mustEgret(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.egret(args...)
	if code != 0 {
		c.t.Fatalf("egret %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// dumpLogs logs the last lines of every process log of the cluster.
func (c *cluster) dumpLogs() {
	logs, _ := filepath.Glob(filepath.Join(c.home, "topologies", "*", "*", "*", "*", "*.log"))
	more, _ := filepath.Glob(filepath.Join(c.home, "topologies", "*", "*", "*", "*", "logs", "*.log"))
	for _, f := range append(logs, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		c.t.Logf("== %s\n%s", strings.TrimPrefix(f, c.home), strings.Join(lines, "\n"))
	}
}

// killAll kills every topology still listed, then any process left in
// this cluster's home (a safety net: tests assert cleanliness themselves).
func (c *cluster) killAll() {
	out, _, code := c.egret("list", c.name, "--output", "json")
	if code == 0 {
		var infos []struct{ Name string }
		_ = json.Unmarshal([]byte(out), &infos)
		for _, i := range infos {
			c.egret("kill", c.name, i.Name)
		}
	}
	for _, pid := range c.processes() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// processes returns the pids of processes whose command line mentions
// this cluster's home directory or were started from it, the egret and
// topology processes run under one of its roots, and those in pods when
// the cluster runs its containers in pods (the real node is one test's at
// a time: every pod is this cluster's).
func (c *cluster) processes() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, []byte(c.home)) || (c.pods != nil && isEgretProcess(cmdline) && inPod(pid)) {
			pids = append(pids, pid)
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if strings.HasPrefix(cwd, c.home) || (len(c.roots) > 0 && isEgretProcess(cmdline) && c.under(cmdline, cwd, c.roots)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// isEgretProcess reports whether a command line (NUL-separated) runs the
// egret binary or a topology binary of a package (W/package/topology),
// not a resource manager's own process or wrapper.
func isEgretProcess(cmdline []byte) bool {
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	base := filepath.Base(string(argv0))
	return base == "egret" || base == "topology"
}

// under reports whether a process's command line or working directory
// lies under one of dirs.
func (c *cluster) under(cmdline []byte, cwd string, dirs []string) bool {
	for _, d := range dirs {
		if bytes.Contains(cmdline, []byte(d)) || strings.HasPrefix(cwd, d) {
			return true
		}
	}
	return false
}

// sharedDir creates dir, where a topology writes the files a test reads,
// writable by every user (in pods the topology runs as another user than
// the test, whose egret submit may create it first), and returns it.
func sharedDir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// getJSON fetches url into v.
func getJSON(url string, v any) error {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, b)
	}
	return json.Unmarshal(b, v)
}
