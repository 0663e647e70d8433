package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/daemons/executor"
	"github.com/egret-stream/egret/daemons/shell"
	"github.com/egret-stream/egret/internal/zktest"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// shellStatus reads a container's process status as the executor wrote it.
func (c *cluster) shellStatus(topology string, container int, name string) executor.ProcessStatus {
	var pf executor.PidFile
	b, err := os.ReadFile(filepath.Join(c.workDir(topology), fmt.Sprintf("container-%d", container), "pids.json"))
	if err == nil && json.Unmarshal(b, &pf) == nil {
		for _, st := range pf.Status {
			if st.Name == name {
				return st
			}
		}
	}
	return executor.ProcessStatus{}
}

func post(t *testing.T, url string, header map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestShellLogsKillAndLogLevel runs a topology and uses every container
// shell feature on it: egret logs (whole, --tail, -f), traversal attempts
// against the real shell, the kill endpoint (refused without or with a
// wrong secret, the executor restarts the killed instance) and egret
// loglevel (debug lines appear in one component's log and the level
// reverts by itself).
func TestShellLogsKillAndLogLevel(t *testing.T) {
	shellFeatures(t, newCluster(t, "local"))
}

// TestShellLogsKillAndLogLevelZooKeeper: the same with the shells'
// ephemeral nodes and the secret in ZooKeeper.
func TestShellLogsKillAndLogLevelZooKeeper(t *testing.T) {
	addr := zktest.Start(t)
	c := newCluster(t, "localzk", "egret.statemgr.connection.string="+addr, "egret.statemgr.session.timeout=5s")
	c.zk = addr
	shellFeatures(t, c)
}

func shellFeatures(t *testing.T, c *cluster) {
	c.mustEgret("submit", c.name, binary(t, "wordcount"), "--", "--containers", "2", "--rate", "100")
	waitFor(t, "the spout to emit", 2*time.Minute, func() bool {
		return c.metric("wordcount", "sentence", "instance.emitted") > 0
	})
	ctx := context.Background()
	store := c.store()
	pp, _, err := store.PackingPlan(ctx, "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	// The first count task and its container.
	task, ctr := -1, 0
	for _, ct := range pp.Containers {
		for _, in := range ct.Instances {
			if in.Component == "count" && (task < 0 || in.TaskID < task) {
				task, ctr = in.TaskID, ct.ID
			}
		}
	}
	inst := executor.InstanceName("count", task)
	waitFor(t, "the shells of every container", 2*time.Minute, func() bool {
		for _, n := range []int{0, 1, 2} {
			if _, err := store.ShellLocation(ctx, "wordcount", n); err != nil {
				return false
			}
		}
		return true
	})
	loc, err := store.ShellLocation(ctx, "wordcount", ctr)
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://%s:%d", loc.GetHost(), loc.GetPort())

	// egret logs: the whole log, its last line, the listing.
	out := c.mustEgret("logs", c.name, "wordcount", "count")
	if !strings.Contains(out, "starting "+inst) {
		t.Errorf("egret logs count does not show %s's log:\n%s", inst, out)
	}
	out = c.mustEgret("logs", c.name, "wordcount", fmt.Sprintf("count:%d", task), "--tail", "1")
	if n := strings.Count(out, "\n"); n != 1 {
		t.Errorf("--tail 1 printed %d lines:\n%s", n, out)
	}
	out = c.mustEgret("logs", c.name, "wordcount", "container", fmt.Sprint(ctr))
	for _, want := range []string{inst + ".log", "stmgr.log", "metricsmgr.log", "shell.log"} {
		if !strings.Contains(out, want) {
			t.Errorf("egret logs container %d lists no %s:\n%s", ctr, want, out)
		}
	}
	out = c.mustEgret("logs", c.name, "wordcount")
	if !strings.Contains(out, "tmanager.log") || !strings.Contains(out, inst+".log") {
		t.Errorf("egret logs lists:\n%s", out)
	}

	// Bad input: exit 2 and one line; a missing topology: exit 1.
	for _, args := range [][]string{
		{"logs", c.name, "wordcount", "nosuch"},
		{"logs", c.name, "wordcount", "count:99"},
		{"logs", c.name, "wordcount", "../etc"},
		{"logs", c.name, "wordcount", "container", "x"},
		{"logs", c.name, "wordcount", "container", "1", "--file", "../pids.json"},
		{"logs", c.name, "wordcount", "count", "--tail", "-5"},
		{"logs", c.name},
		{"loglevel", c.name, "wordcount", "trace"},
		{"loglevel", c.name, "wordcount", "debug", "--duration", "-1s"},
		{"loglevel", c.name, "wordcount", "debug", "--component", "nosuch"},
	} {
		_, errOut, code := c.egret(args...)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
			t.Errorf("egret %s: exit %d, stderr %q; want 2 and one line", strings.Join(args, " "), code, errOut)
		}
	}
	if _, errOut, code := c.egret("logs", c.name, "nosuch", "count"); code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
		t.Errorf("egret logs of a missing topology: exit %d, stderr %q", code, errOut)
	}

	// Traversal attempts against the real shell: refused, nothing served.
	for _, p := range []string{"/logs/..%2fpids.json", "/logs/%2e%2e%2fpids.json", "/logs/..", "/logs/pids.json", "/logs/%2fetc%2fpasswd"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if (resp.StatusCode != 400 && resp.StatusCode != 404) || strings.Contains(string(b), `"executor"`) || strings.Contains(string(b), "root:") {
			t.Errorf("GET %s = %d %q", p, resp.StatusCode, b)
		}
	}

	// egret logs -f follows the instance's log through a restart.
	var fargs []string
	for _, p := range c.props {
		fargs = append(fargs, "--config-property", p)
	}
	follow := exec.Command(binary(t, "egret"), append(fargs, "logs", c.name, "wordcount", "count", "-f", "--tail", "5")...)
	follow.Env = append(os.Environ(), "EGRET_HOME="+c.home)
	var followOut, followErr syncBuffer
	follow.Stdout, follow.Stderr = &followOut, &followErr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	followDone := make(chan error, 1)
	go func() { followDone <- follow.Wait() }()
	t.Cleanup(func() {
		_ = follow.Process.Kill()
		<-followDone
	})

	waitFor(t, "egret logs -f to print the end of the log", 2*time.Minute, func() bool {
		return strings.Contains(followOut.String(), "instance running")
	})
	startsBefore := strings.Count(followOut.String(), "starting "+inst)

	// The kill endpoint: refused without the secret and with a wrong one.
	pid := c.pids("wordcount", ctr)[inst]
	if pid == 0 {
		t.Fatalf("no pid for %s", inst)
	}
	kill := base + "/processes/" + inst + "/kill"
	if code, body := post(t, kill, nil, ""); code != http.StatusUnauthorized {
		t.Errorf("kill without a secret = %d %s", code, body)
	}
	if code, body := post(t, kill, map[string]string{shell.SecretHeader: hex.EncodeToString([]byte("not the secret"))}, ""); code != http.StatusForbidden {
		t.Errorf("kill with a wrong secret = %d %s", code, body)
	}
	if p := c.pids("wordcount", ctr)[inst]; p != pid || syscall.Kill(pid, 0) != nil {
		t.Fatalf("%s (%d) died without the secret (now %d)", inst, pid, p)
	}
	secret, err := store.Secret(ctx, "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(t, kill, map[string]string{shell.SecretHeader: hex.EncodeToString(secret)}, ""); code != http.StatusOK {
		t.Fatalf("kill with the secret = %d %s", code, body)
	}
	waitFor(t, "the executor to restart the killed instance", 2*time.Minute, func() bool {
		p := c.pids("wordcount", ctr)[inst]
		return p != 0 && p != pid && c.shellStatus("wordcount", ctr, inst).Restarts >= 1
	})
	code, body := 0, ""
	resp, err := http.Get(base + "/processes")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		code, body = resp.StatusCode, string(b)
	}
	if code != 200 || !strings.Contains(body, `"name":"`+inst+`"`) || !strings.Contains(body, `"restarts":1`) {
		t.Errorf("GET /processes = %d %s", code, body)
	}
	waitFor(t, "egret logs -f to show the restart", 2*time.Minute, func() bool {
		return strings.Count(followOut.String(), "starting "+inst) > startsBefore
	})
	if err := follow.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-followDone:
		followDone <- err
		if err != nil {
			t.Errorf("egret logs -f after an interrupt: %v (%s)", err, followErr.String())
		}
	case <-time.After(time.Minute):
		t.Error("egret logs -f did not stop on an interrupt")
	}

	// Live log level: debug for count for a few seconds, then back.
	logFile := filepath.Join(c.workDir("wordcount"), fmt.Sprintf("container-%d", ctr), "logs", inst+".log")
	splitLog := filepath.Join(c.workDir("wordcount"), "container-1", "logs", executor.InstanceName("split", splitTask(t, c))+".log")
	before, _ := os.ReadFile(logFile)
	out = c.mustEgret("loglevel", c.name, "wordcount", "debug", "--component", "count", "--duration", "6s")
	if !strings.Contains(out, "log level debug for count") {
		t.Errorf("loglevel printed %q", out)
	}
	newLines := func() string {
		b, _ := os.ReadFile(logFile)
		if len(b) < len(before) {
			return string(b)
		}
		return string(b[len(before):])
	}
	waitFor(t, "debug lines in the count instance's log", 2*time.Minute, func() bool {
		return strings.Contains(newLines(), `"level":"debug"`)
	})
	waitFor(t, "the count instance to revert to info by itself", 2*time.Minute, func() bool {
		s := newLines()
		i := strings.LastIndex(s, "log level changed")
		return i >= 0 && strings.Contains(s[i:], `"to":"info"`)
	})
	if b, _ := os.ReadFile(splitLog); strings.Contains(string(b), `"level":"debug"`) {
		t.Errorf("the split instance (another component) logged at debug:\n%s", b)
	}

	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
}

// splitTask returns a split task of container 1.
func splitTask(t *testing.T, c *cluster) int {
	t.Helper()
	for name := range c.pids("wordcount", 1) {
		if rest, ok := strings.CutPrefix(name, "instance-split-"); ok {
			var n int
			if _, err := fmt.Sscanf(rest, "%d", &n); err == nil {
				return n
			}
		}
	}
	return -1
}
