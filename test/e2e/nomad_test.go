package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/internal/zktest"
	"github.com/egret-stream/egret/schedulers/nomad/nomadtest"
)

// These tests run topologies on a real Nomad agent: `nomad agent -dev`
// (one server and client, raw_exec on), started by nomadtest.StartAgent on
// free ports with its own data directory. Egret never depends on Nomad's
// source: scripts/nomad-agent.sh builds the binary beside the project.

// freePort returns a TCP port free on 127.0.0.1 right now.
func freePort(t *testing.T) int { return nomadtest.FreePort(t) }

// packageServer runs `egret serve-packages` for the cluster on a free port
// and returns its upload URI.
func packageServer(t *testing.T, dir string) string {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(binary(t, "egret"), "serve-packages", "--dir", dir, "--addr", fmt.Sprintf("127.0.0.1:%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, "the package server", 30*time.Second, func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return fmt.Sprintf("http://127.0.0.1:%d/packages/", port)
}

// nomadCluster is the nomad cluster of the docs' quick start against
// agent: its defaults, with the state in local files (one machine) and a
// small CPU share per core, as a dev agent has little to hand out.
func nomadCluster(t *testing.T, agent *nomadtest.Agent) (*cluster, string) {
	t.Helper()
	pkgs, err := os.MkdirTemp("", "nomad-packages-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pkgs) })
	uri := packageServer(t, pkgs)
	c := newCluster(t, "nomad",
		"egret.nomad.address="+agent.Addr,
		"egret.uploader.http.uri="+uri,
		"egret.statemgr=localfs",
		"egret.nomad.mhz.per.core=100",
	)
	c.props = append(c.props, "egret.statemgr.root.path="+filepath.Join(c.home, "state", "nomad"))
	return c, pkgs
}

// componentExecuted returns the executed count of a component.
func componentExecuted(t *testing.T, c *cluster, component string) float64 {
	t.Helper()
	var st struct{ Components map[string]map[string]float64 }
	out, _, code := c.egret("metrics", "nomad", "wordcount", "--output", "json")
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		return -1
	}
	return st.Components[component]["instance.executed"]
}

// waitCounting waits until the count bolt's executed tuples rise.
func waitCounting(t *testing.T, c *cluster, what string) {
	t.Helper()
	first := -1.0
	waitFor(t, "counts rising "+what, 2*time.Minute, func() bool {
		n := componentExecuted(t, c, "count")
		if n > 0 && first < 0 {
			first = n
		}
		return first > 0 && n > first
	})
}

func listRow(t *testing.T, c *cluster) string {
	t.Helper()
	for _, l := range strings.Split(c.mustEgret("list", "nomad"), "\n") {
		if strings.HasPrefix(l, "wordcount ") {
			return strings.Join(strings.Fields(l), " ")
		}
	}
	return ""
}

// TestNomadRealAgent runs word count on a real Nomad dev agent through
// every operation: submit (3 containers), list, metrics, deactivate and
// activate, restart of one container and of all, update of parallelism
// and of the container count with data flowing, kill -9 of an executor
// (Nomad restarts it), kill twice; then the failures: a topology that
// cannot be placed, an agent that does not answer.
func TestNomadRealAgent(t *testing.T) {
	agent := nomadtest.StartAgent(t)
	c, pkgs := nomadCluster(t, agent)
	wc := binary(t, "wordcount")

	out := c.mustEgret("submit", "nomad", wc, "--wait", "2m", "--", "--containers", "3")
	if !strings.Contains(out, `submitted topology "wordcount"`) {
		t.Fatalf("submit output:\n%s", out)
	}
	if row := listRow(t, c); !strings.HasPrefix(row, "wordcount running 3 6 ") {
		t.Fatalf("list: %q, want wordcount running with 3 containers and 6 instances", row)
	}
	if got := agent.Executors(); len(got) != 4 {
		t.Fatalf("executors %v, want containers 0..3", got)
	}
	for _, a := range agent.ListenAddrs() {
		if !strings.HasPrefix(a, "0100007F:") { // 127.0.0.1, the dev agent's NOMAD_IP
			t.Errorf("an egret daemon listens on %s, not on the address Nomad gave its port", a)
		}
	}
	waitCounting(t, c, "after submit")

	c.mustEgret("deactivate", "nomad", "wordcount")
	if row := listRow(t, c); !strings.HasPrefix(row, "wordcount deactivated ") {
		t.Errorf("list after deactivate: %q", row)
	}
	c.mustEgret("activate", "nomad", "wordcount")
	waitCounting(t, c, "after activate")

	before := agent.Executors()
	if out := c.mustEgret("restart", "nomad", "wordcount", "2"); !strings.Contains(out, `restarted container 2 of topology "wordcount"`) {
		t.Errorf("restart output %q", out)
	}
	waitFor(t, "a new executor in container 2", 2*time.Minute, func() bool {
		p := agent.Executors()[2]
		return p != 0 && p != before[2]
	})
	if after := agent.Executors(); after[1] != before[1] || after[0] != before[0] {
		t.Errorf("restarting container 2 restarted others: %v -> %v", before, after)
	}
	// Nomad reports container 2 pending until it learns from its client
	// that the task runs again; the restart of all starts from there.
	waitFor(t, "Nomad to report every allocation running", 2*time.Minute, func() bool { return agent.AllRunning() })
	before = agent.Executors()
	restartAll, restartLog, code := c.egret("restart", "nomad", "wordcount")
	if code != 0 || !strings.Contains(restartAll, "restarted every container") {
		t.Fatalf("egret restart nomad wordcount: exit %d\nstdout:\n%s\nstderr:\n%s", code, restartAll, restartLog)
	}
	await(t, "new executors in every container", 2*time.Minute, func() (bool, string) {
		now, fresh := agent.Executors(), 0
		for i := 0; i <= 3; i++ {
			if now[i] != 0 && now[i] != before[i] {
				fresh++
			}
		}
		return fresh == 4, fmt.Sprintf("executors %v (before %v); egret restart logged:\n%s\nNomad's allocations:\n%s", now, before, restartLog, agent.Allocations())
	})
	waitCounting(t, c, "after restarting every container")

	c.mustEgret("update", "nomad", "wordcount", "--component-parallelism", "count:4")
	if row := listRow(t, c); !strings.HasPrefix(row, "wordcount running 3 8 ") {
		t.Errorf("list after count:4: %q", row)
	}
	waitCounting(t, c, "after update --component-parallelism count:4")
	c.mustEgret("update", "nomad", "wordcount", "--container-number", "4")
	if row := listRow(t, c); !strings.HasPrefix(row, "wordcount running 4 8 ") {
		t.Errorf("list after --container-number 4: %q", row)
	}
	if got := agent.Executors(); len(got) != 5 {
		t.Errorf("executors %v after growing to 4 containers", got)
	}
	waitCounting(t, c, "after update --container-number 4")
	c.mustEgret("update", "nomad", "wordcount", "--container-number", "3")
	if row := listRow(t, c); !strings.HasPrefix(row, "wordcount running 3 8 ") {
		t.Errorf("list after --container-number 3: %q", row)
	}
	waitFor(t, "container 4's executor to stop", time.Minute, func() bool { _, ok := agent.Executors()[4]; return !ok })
	waitCounting(t, c, "after update --container-number 3")

	victim := agent.Executors()[1]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Nomad to restart the killed executor of container 1", 2*time.Minute, func() bool {
		p := agent.Executors()[1]
		return p != 0 && p != victim
	})
	waitCounting(t, c, "after kill -9 of an executor")

	if out := c.mustEgret("kill", "nomad", "wordcount"); !strings.Contains(out, `killed topology "wordcount"`) {
		t.Errorf("kill output %q", out)
	}
	// A second kill: the nomad scheduler is asked to stop any job left,
	// and the kill says that there was no topology (exit 1; 0 with
	// --ignore-not-found).
	if _, stderr, code := c.egret("kill", "nomad", "wordcount"); code != 1 || !strings.Contains(stderr, `no topology "wordcount"`) {
		t.Errorf("second kill: exit %d, %q", code, stderr)
	}
	c.mustEgret("kill", "nomad", "wordcount", "--ignore-not-found")
	assertNothingLeft(t, c, agent, pkgs)

	// Failures leave nothing behind either.
	_, errOut, code := c.egret("submit", "nomad", wc, "--config-property", "egret.nomad.mhz.per.core=100000", "--", "--containers", "3")
	if code != 1 || !strings.Contains(errOut, "Nomad cannot place") || !strings.Contains(errOut, "cpu exhausted") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("submit that cannot be placed: exit %d, stderr %q", code, errOut)
	}
	assertNothingLeft(t, c, agent, pkgs)
	_, errOut, code = c.egret("submit", "nomad", wc, "--config-property", fmt.Sprintf("egret.nomad.address=http://127.0.0.1:%d", freePort(t)), "--", "--containers", "3")
	if code != 1 || !strings.Contains(errOut, "cannot reach Nomad") {
		t.Errorf("submit to an agent that does not answer: exit %d, stderr %q", code, errOut)
	}
	assertNothingLeft(t, c, agent, pkgs)
}

// assertNothingLeft: no Nomad job, no process, no package and no state.
func assertNothingLeft(t *testing.T, c *cluster, agent *nomadtest.Agent, pkgs string) {
	t.Helper()
	if jobs := agent.Jobs(t); len(jobs) != 0 {
		t.Errorf("Nomad jobs left: %v", jobs)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for left := agent.Processes("egret"); len(left) > 0; left = agent.Processes("egret") {
		if time.Now().After(deadline) {
			for _, p := range left {
				t.Errorf("process %d left: %s", p.Pid, strings.Join(p.Args, " "))
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if left, _ := os.ReadDir(pkgs); len(left) != 0 {
		t.Errorf("packages left on the package server: %v", left)
	}
	if names, err := c.store().Topologies(context.Background()); err != nil || len(names) != 0 {
		t.Errorf("state left: %v %v", names, err)
	}
	if row := listRow(t, c); row != "" {
		t.Errorf("list shows %q", row)
	}
}

// TestNomadWaitTimeoutNamesTheCause: when the containers cannot start,
// submit's --wait timeout says why, from the task events.
func TestNomadWaitTimeoutNamesTheCause(t *testing.T) {
	agent := nomadtest.StartAgent(t)
	c, pkgs := nomadCluster(t, agent)
	// egret itself is to be downloaded from a URL that answers 404.
	missing := ""
	for _, p := range c.props {
		if v, ok := strings.CutPrefix(p, "egret.uploader.http.uri="); ok {
			missing = v + "egret-that-is-not-there"
		}
	}
	_, errOut, code := c.egret("submit", "nomad", binary(t, "wordcount"), "--wait", "30s",
		"--config-property", "egret.package.core.uri="+missing, "--", "--containers", "2")
	for _, want := range []string{"no physical plan", "Failed Artifact Download", "bad response code: 404", "nomad alloc status ", "the topology stays submitted (egret kill nomad wordcount removes it)"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("submit whose containers cannot start: exit %d, stderr %q lacks %q", code, errOut, want)
		}
	}
	c.mustEgret("kill", "nomad", "wordcount")
	assertNothingLeft(t, c, agent, pkgs)
}

// TestNomadExecDriver runs word count with the exec driver (chroot and
// cgroups: the task sees only its directory, so the state is in
// ZooKeeper, the nomad cluster's default state manager), when the agent
// offers exec (Linux, as root).
func TestNomadExecDriver(t *testing.T) {
	agent := nomadtest.StartAgent(t)
	var nodes []struct {
		Drivers map[string]struct{ Healthy bool }
	}
	if err := agent.Get("/v1/nodes?resources=false", &nodes); err != nil || len(nodes) != 1 || !nodes[0].Drivers["exec"].Healthy {
		t.Skip("the dev agent offers no healthy exec driver here (it needs Linux, root and cgroups)")
	}
	zk := zktest.Start(t)
	c, pkgs := nomadCluster(t, agent)
	c.props = slices.DeleteFunc(c.props, func(p string) bool { return strings.HasPrefix(p, "egret.statemgr") })
	c.props = append(c.props, "egret.nomad.driver=exec", "egret.statemgr.connection.string="+zk, "egret.statemgr.session.timeout=5s")
	c.zk = zk
	c.mustEgret("submit", "nomad", binary(t, "wordcount"), "--wait", "2m", "--", "--containers", "2")
	if row := listRow(t, c); !strings.HasPrefix(row, "wordcount running 2 ") {
		t.Fatalf("list: %q", row)
	}
	waitCounting(t, c, "with the exec driver")
	c.mustEgret("kill", "nomad", "wordcount")
	assertNothingLeft(t, c, agent, pkgs)
}

// TestNomadPrometheusService: with the prometheus sink on, every container
// gets a metrics port from Nomad, the metrics managers listen on it, Nomad's
// service registry lists one egret-metrics-<topology> entry per container,
// and a real Prometheus scrapes the addresses it lists.
func TestNomadPrometheusService(t *testing.T) {
	agent := nomadtest.StartAgent(t)
	prometheusBinary(t)
	c, pkgs := nomadCluster(t, agent)
	c.props = append(c.props, "egret.metrics.sinks=file,tmanager,prometheus")
	c.mustEgret("submit", "nomad", binary(t, "wordcount"), "--wait", "2m", "--", "--containers", "2")

	type entry struct {
		Address string
		Port    int
		AllocID string
	}
	var entries []entry
	waitFor(t, "the metrics service of every container in Nomad's registry", 2*time.Minute, func() bool {
		entries = nil
		return agent.Get("/v1/service/egret-metrics-wordcount", &entries) == nil && len(entries) == 3
	})
	for _, e := range entries {
		target := net.JoinHostPort(e.Address, strconv.Itoa(e.Port))
		waitFor(t, "egret_ series on "+target, time.Minute, func() bool {
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + target + "/metrics")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode == 200 && bytes.Contains(b, []byte(`egret_`)) && bytes.Contains(b, []byte(`topology="wordcount"`))
		})
	}

	// A real Prometheus scrapes the addresses Nomad's registry gives (the
	// Debian build of Prometheus has no nomad_sd_configs: the test turns
	// the registry's entries into static targets).
	var targets []string
	for _, e := range entries {
		targets = append(targets, strconv.Quote(net.JoinHostPort(e.Address, strconv.Itoa(e.Port))))
	}
	prom := startPrometheusWith(t, fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: egret\n    static_configs:\n      - targets: [%s]\n", strings.Join(targets, ", ")))
	waitPromRising(t, prom, `sum(egret_instance_executed_total{topology="wordcount",component="count"})`, "executed tuples of the count bolts, scraped at the registered addresses,")
	c.mustEgret("kill", "nomad", "wordcount")
	assertNothingLeft(t, c, agent, pkgs)
}
