package nomadtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// AgentVersion is the Nomad release the real-agent tests run: the last
// open-source (MPL-2.0) 1.6 release, built by scripts/nomad-agent.sh.
const AgentVersion = "1.6.3"

// AgentBinary returns the Nomad binary of the real-agent tests:
// $EGRET_NOMAD_BIN, else nomad on the PATH, else the one
// scripts/nomad-agent.sh builds into ~/.cache/egret. Without one the test
// fails when EGRET_REQUIRE_NOMAD=1 (make test sets it) and skips otherwise.
func AgentBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: starts a real Nomad agent")
	}
	if p := os.Getenv("EGRET_NOMAD_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("EGRET_NOMAD_BIN=%s: %v", p, err)
		}
		return p
	}
	if p, err := exec.LookPath("nomad"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "egret", "nomad-"+AgentVersion, "nomad")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	const how = "scripts/nomad-agent.sh builds it from the v" + AgentVersion + " module (make test-deps runs it), or set EGRET_NOMAD_BIN"
	if os.Getenv("EGRET_REQUIRE_NOMAD") == "1" {
		t.Fatal("no Nomad agent binary and EGRET_REQUIRE_NOMAD=1: " + how)
	}
	t.Skip("no Nomad agent binary: " + how)
	return ""
}

// Agent is a real Nomad dev agent (`nomad agent -dev`: one server and one
// client, raw_exec on) run by one test on free loopback ports with its own
// data directory.
type Agent struct {
	Addr    string // http://127.0.0.1:port
	DataDir string
	dir     string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// FreePort returns a TCP port free on 127.0.0.1 right now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Dynamic port windows: Nomad gives a task's ports from its client's
// dynamic range without asking the host, so two agents on one machine
// (the suite's, the e2e's and the package's run at once under make test)
// with the default range 20000-32000 hand out the same port, and other
// tests' clusters (Slurm, YARN) pick theirs from 20000-32000 too. Each
// agent takes one of these windows below 20000, held by a file lock for
// as long as the test process lives.
const (
	windowBase  = 10000
	windowSize  = 500
	windowCount = 20
)

// dynamicPorts locks a window no other agent on this machine holds and
// returns its first and last port.
func dynamicPorts(t testing.TB) (low, high int) {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "egret-nomadtest-ports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range windowCount {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(i)+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		t.Cleanup(func() { f.Close() }) // closing releases the lock
		low = windowBase + i*windowSize
		return low, low + windowSize - 1
	}
	t.Fatalf("all %d Nomad dynamic port windows under %s are held by other agents", windowCount, dir)
	return 0, 0
}

// StartAgent starts a dev agent and waits until its client node is ready
// with the raw_exec driver. It is stopped, with everything it ran, when
// the test ends; its log's last lines are logged when the test failed.
func StartAgent(t testing.TB) *Agent {
	t.Helper()
	bin := AgentBinary(t)
	dir, err := os.MkdirTemp("", "nomad-dev-") // no "egret" in the agent's own command line
	if err != nil {
		t.Fatal(err)
	}
	httpPort, rpc, serf := FreePort(t), FreePort(t), FreePort(t)
	low, high := dynamicPorts(t)
	hcl := fmt.Sprintf("ports {\n  http = %d\n  rpc = %d\n  serf = %d\n}\nclient {\n  min_dynamic_port = %d\n  max_dynamic_port = %d\n}\n",
		httpPort, rpc, serf, low, high)
	if err := os.WriteFile(filepath.Join(dir, "agent.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{Addr: fmt.Sprintf("http://127.0.0.1:%d", httpPort), DataDir: filepath.Join(dir, "data"), dir: dir, exited: make(chan struct{})}
	a.cmd = exec.Command(bin, "agent", "-dev", "-bind", "127.0.0.1", "-data-dir", a.DataDir, "-config", filepath.Join(dir, "agent.hcl"))
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The agent's environment: none of the test's NOMAD_* variables.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NOMAD_") {
			a.cmd.Env = append(a.cmd.Env, kv)
		}
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.cmd.Wait(); logf.Close(); close(a.exited) }()
	t.Cleanup(func() {
		a.Stop()
		if t.Failed() {
			t.Logf("== nomad agent log (last lines)\n%s", a.LogTail(30))
		}
		os.RemoveAll(dir)
	})
	deadline := time.Now().Add(2 * time.Minute)
	for !a.clientReady() {
		select {
		case <-a.exited:
			t.Fatalf("the Nomad agent exited: %s\n%s", a.cmd.ProcessState, a.LogTail(30))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Nomad dev agent's client node has no healthy raw_exec after 2m\n%s", a.LogTail(30))
		}
	}
	return a
}

func (a *Agent) clientReady() bool {
	var nodes []struct {
		Status  string
		Drivers map[string]struct{ Healthy bool }
	}
	if err := a.Get("/v1/nodes?resources=false&os=false", &nodes); err != nil {
		return false
	}
	return len(nodes) == 1 && nodes[0].Status == "ready" && nodes[0].Drivers["raw_exec"].Healthy
}

// LogTail returns the last n lines of the agent's log.
func (a *Agent) LogTail(n int) string {
	b, _ := os.ReadFile(filepath.Join(a.dir, "agent.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Get decodes the JSON answer of a GET of path on the agent's HTTP API.
func (a *Agent) Get(path string, v any) error {
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(a.Addr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// Stop stops the agent, then kills any process it started that is left.
func (a *Agent) Stop() {
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-a.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-a.exited
	}
	for _, p := range a.Processes("") {
		_ = syscall.Kill(p.Pid, syscall.SIGKILL)
	}
}

// Proc is a process the agent runs.
type Proc struct {
	Pid  int
	Args []string
}

// Processes lists the processes run from the agent's data directory (the
// allocations' executors, daemons and instances, and Nomad's executor
// wrappers) whose command line also holds word.
func (a *Agent) Processes(word string) []Proc {
	entries, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || pid == a.cmd.Process.Pid {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(a.DataDir)) || !bytes.Contains(b, []byte(word)) {
			continue
		}
		out = append(out, Proc{pid, strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")})
	}
	return out
}

// Executors returns the pid of each Egret container's executor.
func (a *Agent) Executors() map[int]int {
	out := map[int]int{}
	for _, p := range a.Processes("executor") {
		if len(p.Args) < 2 || p.Args[1] != "executor" {
			continue
		}
		for i, arg := range p.Args {
			if arg == "--container" && i+1 < len(p.Args) {
				if c, err := strconv.Atoi(p.Args[i+1]); err == nil {
					out[c] = p.Pid
				}
			}
		}
	}
	return out
}

// Jobs lists the IDs of the agent's jobs (stopped ones included).
func (a *Agent) Jobs(t testing.TB) []string {
	t.Helper()
	var stubs []struct{ ID string }
	if err := a.Get("/v1/jobs", &stubs); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range stubs {
		ids = append(ids, s.ID)
	}
	return ids
}

// AllRunning reports whether every allocation Nomad wants running runs.
func (a *Agent) AllRunning() bool {
	var allocs []struct{ DesiredStatus, ClientStatus string }
	if err := a.Get("/v1/allocations", &allocs); err != nil {
		return false
	}
	n := 0
	for _, al := range allocs {
		if al.DesiredStatus == "run" {
			n++
			if al.ClientStatus != "running" {
				return false
			}
		}
	}
	return n > 0
}

// Allocations describes every allocation for a failure message: its task
// group, desired and client status, and each task's state, restart count
// and last event.
func (a *Agent) Allocations() string {
	var allocs []struct {
		TaskGroup, DesiredStatus, ClientStatus string
		TaskStates                             map[string]struct {
			State    string
			Restarts int
			Events   []struct{ Type, DisplayMessage string }
		}
	}
	if err := a.Get("/v1/allocations?task_states=true", &allocs); err != nil {
		return "allocations: " + err.Error()
	}
	var b strings.Builder
	for _, al := range allocs {
		fmt.Fprintf(&b, "%s %s/%s", al.TaskGroup, al.DesiredStatus, al.ClientStatus)
		for name, st := range al.TaskStates {
			fmt.Fprintf(&b, " %s=%s restarts=%d", name, st.State, st.Restarts)
			if n := len(st.Events); n > 0 {
				fmt.Fprintf(&b, " last event %q %q", st.Events[n-1].Type, st.Events[n-1].DisplayMessage)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ListenAddrs returns the addresses the TCP listeners of the agent's egret
// processes are bound to (from /proc/net/tcp and tcp6, hex as there).
func (a *Agent) ListenAddrs() []string {
	inodes := map[string]bool{}
	for _, p := range a.Processes("egret") {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.Pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", p.Pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) > 9 && fs[3] == "0A" && inodes[fs[9]] { // 0A: LISTEN
				out = append(out, fs[1])
			}
		}
	}
	return out
}
