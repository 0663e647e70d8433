package shell

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
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

	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/shellapi"
	"github.com/egret-stream/egret/internal/loglevel"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/statemgr/memory"
)

const outsideContent = "TOP-SECRET-OUTSIDE-THE-CONTAINER"

type fixture struct {
	work   string
	addr   string
	secret []byte
	store  *state.Store
}

func mustWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writePids(t *testing.T, work string, st ...shellapi.ProcessStatus) {
	t.Helper()
	pf := shellapi.PidFile{Executor: os.Getpid(), Processes: map[string]int{}, Status: st}
	for _, s := range st {
		if s.PID > 0 {
			pf.Processes[s.Name] = s.PID
		}
	}
	b, _ := json.Marshal(pf)
	mustWrite(t, filepath.Join(work, "pids.json"), string(b))
}

// start runs a shell over a fresh container directory: logs/a.log,
// logs/instance-word-1.log, a symbolic link logs/evil.log to a file
// outside, a directory logs/sub, and secrets next to W.
func start(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "w")
	mustWrite(t, filepath.Join(root, "secret.txt"), outsideContent)
	mustWrite(t, filepath.Join(work, "secret.txt"), outsideContent) // in W, not in W/logs
	mustWrite(t, filepath.Join(work, "logs", "a.log"), "0123456789\nline two\nline three\n")
	mustWrite(t, filepath.Join(work, "logs", "instance-word-1.log"), "word\n")
	mustWrite(t, filepath.Join(work, "logs", "sub", "x.log"), outsideContent)
	if err := os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(work, "logs", "evil.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret.txt", filepath.Join(work, "logs", "rel.log")); err != nil {
		t.Fatal(err)
	}
	writePids(t, work)
	ms := memory.NewStore()
	sm := ms.NewSession()
	store := state.New(sm)
	secret := []byte("0123456789abcdef0123456789abcdef")
	f := &fixture{work: work, secret: secret, store: state.New(ms.NewSession())}
	// What submit writes (the secret), through the state package.
	if err := writeSecret(store, "wc", secret); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{TopologyName: "wc", TopologyID: "wc-1", Container: 1, WorkDir: work, Host: "127.0.0.1",
			BindHost: "127.0.0.1", StateManager: sm, Ready: func(a string) { ready <- a }}, zaptest.NewLogger(t))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	select {
	case f.addr = <-ready:
	case err := <-done:
		t.Fatalf("Run = %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the shell did not start")
	}
	return f
}

// writeSecret writes the node submit writes with the rest of the
// topology; the shell needs only it.
func writeSecret(store *state.Store, topology string, secret []byte) error {
	b, err := proto.Marshal(&egretpb.TopologySecret{TopologyName: topology, Secret: secret})
	if err != nil {
		return err
	}
	return store.StateManager().Create(context.Background(), state.Path(state.SecretsDir, topology), b, false)
}

// raw sends path byte for byte (no client-side cleaning or escaping).
func raw(t *testing.T, addr, method, path string, header map[string]string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	req := method + " " + path + " HTTP/1.1\r\nHost: shell\r\nConnection: close\r\n"
	for k, v := range header {
		req += k + ": " + v + "\r\n"
	}
	if method == http.MethodPost {
		req += "Content-Length: 0\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s %q: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPublishesLocation(t *testing.T) {
	f := start(t)
	loc, err := f.store.ShellLocation(context.Background(), "wc", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := net.JoinHostPort(loc.GetHost(), itoa(int(loc.GetPort()))); got != f.addr || loc.GetPid() != int32(os.Getpid()) || loc.GetTopologyId() != "wc-1" {
		t.Errorf("location %v, want %s", loc, f.addr)
	}
	cs, err := f.store.ShellContainers(context.Background(), "wc")
	if err != nil || len(cs) != 1 || cs[0] != 1 {
		t.Errorf("ShellContainers = %v, %v", cs, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestListLogs(t *testing.T) {
	f := start(t)
	code, body := raw(t, f.addr, "GET", "/logs", nil)
	if code != 200 {
		t.Fatalf("GET /logs = %d %s", code, body)
	}
	var files []LogFile
	if err := json.Unmarshal([]byte(body), &files); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, lf := range files {
		names = append(names, lf.Name)
		if lf.Name == "a.log" && (lf.Size != 31 || time.Since(lf.ModTime) > time.Hour) {
			t.Errorf("a.log listed as %+v", lf)
		}
	}
	// Symbolic links and directories are not listed.
	if strings.Join(names, ",") != "a.log,instance-word-1.log" {
		t.Errorf("listed %v", names)
	}
}

func TestReadLog(t *testing.T) {
	f := start(t)
	const whole = "0123456789\nline two\nline three\n"
	for _, tc := range []struct {
		path, want, offset string
	}{
		{"/logs/a.log", whole, ""},
		{"/logs/a.log?offset=2&length=3", "234", "2"},
		{"/logs/a.log?offset=-11", "line three\n", "20"},
		{"/logs/a.log?offset=-1000", whole, "0"},
		{"/logs/a.log?offset=1000", "", "31"},
		{"/logs/a.log?offset=26&length=1000", "hree\n", "26"},
	} {
		resp, err := http.Get("http://" + f.addr + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != tc.want || resp.Header.Get(shellapi.HeaderOffset) != tc.offset || resp.Header.Get(shellapi.HeaderFileSize) != "31" {
			t.Errorf("GET %s = %d %q (offset %q size %q), want %q at %q", tc.path, resp.StatusCode, b,
				resp.Header.Get(shellapi.HeaderOffset), resp.Header.Get(shellapi.HeaderFileSize), tc.want, tc.offset)
		}
	}
	// HTTP Range.
	code, body := raw(t, f.addr, "GET", "/logs/a.log", map[string]string{"Range": "bytes=11-18"})
	if code != http.StatusPartialContent || body != "line two" {
		t.Errorf("Range: %d %q", code, body)
	}
	for _, p := range []string{"/logs/a.log?offset=x", "/logs/a.log?length=-1", "/logs/a.log?offset=1&length=z"} {
		if code, body := raw(t, f.addr, "GET", p, nil); code != http.StatusBadRequest {
			t.Errorf("GET %s = %d %q, want 400", p, code, body)
		}
	}
}

func TestTraversalRefused(t *testing.T) {
	f := start(t)
	abs := filepath.Join(filepath.Dir(f.work), "secret.txt")
	for _, p := range []string{
		"/logs/../secret.txt",
		"/logs/../../secret.txt",
		"/logs/..",
		"/logs/.",
		"/logs/%2e%2e",
		"/logs/%2E%2E%2Fsecret.txt",
		"/logs/..%2fsecret.txt",
		"/logs/..%2f..%2fsecret.txt",
		"/logs/..%5csecret.txt",
		"/logs/%252e%252e%252fsecret.txt",
		"/logs/" + strings.ReplaceAll(abs, "/", "%2f"),
		"/logs/" + abs,
		"/logs//etc/passwd",
		"/logs/%2fetc%2fpasswd",
		"/logs/evil.log",
		"/logs/rel.log",
		"/logs/sub",
		"/logs/sub%2fx.log",
		"/logs/sub/x.log",
		"/logs/a.log%00",
		"/logs/a.log%00.txt",
		"/logs/%00",
		"/logs/.hidden",
		"/logs/%",
		"/logs/a.log%zz",
		"/logs/\\u002e\\u002e",
		"/logs/%c0%ae%c0%ae",
		"/logs/%ef%bc%8e%ef%bc%8e",
		"/../secret.txt",
		"/secret.txt",
		"/logs/secret.txt",
		"/logs/" + strings.Repeat("a", 300),
	} {
		code, body := raw(t, f.addr, "GET", p, nil)
		if code != http.StatusBadRequest && code != http.StatusNotFound {
			t.Errorf("GET %q = %d, want 400 or 404", p, code)
		}
		if strings.Contains(body, outsideContent) {
			t.Errorf("GET %q served the outside file", p)
		}
		if strings.ContainsAny(strings.TrimSuffix(body, "\n"), "\n") {
			t.Errorf("GET %q: error is not one line: %q", p, body)
		}
	}
}

// startChild starts a process in its own process group, as the executor
// does, and returns it with a channel closed when it exits.
func startChild(t *testing.T) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return cmd, exited
}

func TestProcessesAndKill(t *testing.T) {
	f := start(t)
	cmd, exited := startChild(t)
	writePids(t, f.work,
		shellapi.ProcessStatus{Name: "instance-word-1", Kind: shellapi.KindInstance, Task: 1, PID: cmd.Process.Pid, State: shellapi.StateRunning, Restarts: 2},
		shellapi.ProcessStatus{Name: "stmgr", Kind: shellapi.KindStmgr, State: shellapi.StateBackoff, Restarts: 5},
	)
	code, body := raw(t, f.addr, "GET", "/processes", nil)
	var ps []Process
	if code != 200 || json.Unmarshal([]byte(body), &ps) != nil || len(ps) != 2 {
		t.Fatalf("GET /processes = %d %s", code, body)
	}
	if ps[0].Name != "instance-word-1" || ps[0].PID != cmd.Process.Pid || ps[0].Restarts != 2 || ps[0].State != "running" || ps[1].Restarts != 5 {
		t.Errorf("processes %+v", ps)
	}

	kill := "/processes/instance-word-1/kill"
	wrong := hex.EncodeToString([]byte("0123456789abcdef0123456789abcdeX"))
	for _, tc := range []struct {
		method, path string
		header       map[string]string
		want         int
	}{
		{"POST", kill, nil, http.StatusUnauthorized},
		{"POST", kill, map[string]string{SecretHeader: wrong}, http.StatusForbidden},
		{"POST", kill, map[string]string{SecretHeader: "zz"}, http.StatusForbidden},
		{"POST", kill, map[string]string{SecretHeader: hex.EncodeToString(f.secret[:8])}, http.StatusForbidden},
		// The secret in the URL counts for nothing.
		{"POST", kill + "?secret=" + hex.EncodeToString(f.secret), nil, http.StatusUnauthorized},
		{"GET", kill, map[string]string{SecretHeader: hex.EncodeToString(f.secret)}, http.StatusMethodNotAllowed},
		{"POST", "/processes/..%2fx/kill", map[string]string{SecretHeader: hex.EncodeToString(f.secret)}, http.StatusBadRequest},
		{"POST", "/processes/nosuch/kill", map[string]string{SecretHeader: hex.EncodeToString(f.secret)}, http.StatusNotFound},
		{"POST", "/processes/stmgr/kill", map[string]string{SecretHeader: hex.EncodeToString(f.secret)}, http.StatusConflict},
	} {
		if code, body := raw(t, f.addr, tc.method, tc.path, tc.header); code != tc.want {
			t.Errorf("%s %s %v = %d %s, want %d", tc.method, tc.path, tc.header, code, body, tc.want)
		}
	}
	select {
	case <-exited:
		t.Fatal("the process died without the right secret")
	default:
	}
	// A pid file naming another executor (stale, or a reused pid): refused.
	pf := shellapi.PidFile{Executor: 1, Processes: map[string]int{"instance-word-1": cmd.Process.Pid},
		Status: []shellapi.ProcessStatus{{Name: "instance-word-1", PID: cmd.Process.Pid, State: shellapi.StateRunning}}}
	b, _ := json.Marshal(pf)
	mustWrite(t, filepath.Join(f.work, "pids.json"), string(b))
	if code, body := raw(t, f.addr, "POST", kill, map[string]string{SecretHeader: hex.EncodeToString(f.secret)}); code != http.StatusConflict {
		t.Errorf("kill of a process that is not the executor's child = %d %s, want 409", code, body)
	}
	select {
	case <-exited:
		t.Fatal("the process died although it is not the executor's child")
	default:
	}
	writePids(t, f.work, shellapi.ProcessStatus{Name: "instance-word-1", Kind: shellapi.KindInstance, Task: 1, PID: cmd.Process.Pid, State: shellapi.StateRunning})
	if code, body := raw(t, f.addr, "POST", kill, map[string]string{SecretHeader: hex.EncodeToString(f.secret)}); code != 200 {
		t.Fatalf("kill with the secret = %d %s", code, body)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the process survived the kill")
	}
}

func TestLogLevelEndpoint(t *testing.T) {
	f := start(t)
	post := func(body string, header map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+f.addr+"/loglevel", strings.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	good := map[string]string{SecretHeader: hex.EncodeToString(f.secret)}
	for _, tc := range []struct {
		body   string
		header map[string]string
		want   int
	}{
		{`{"level":"debug","duration":"1m"}`, nil, http.StatusUnauthorized},
		{`{"level":"debug","duration":"1m"}`, map[string]string{SecretHeader: "00"}, http.StatusForbidden},
		{`{"level":"trace","duration":"1m"}`, good, http.StatusBadRequest},
		{`{"level":"debug","duration":"-1m"}`, good, http.StatusBadRequest},
		{`{"level":"debug","duration":"48h"}`, good, http.StatusBadRequest},
		{`{"level":"debug","duration":"1m","component":"../x"}`, good, http.StatusBadRequest},
		{`{"level":"debug","duration":"1m","extra":1}`, good, http.StatusBadRequest},
		{`not json`, good, http.StatusBadRequest},
	} {
		if code, body := post(tc.body, tc.header); code != tc.want {
			t.Errorf("POST /loglevel %s = %d %s, want %d", tc.body, code, body, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(f.work, loglevel.FileName)); !os.IsNotExist(err) {
		t.Fatalf("a refused request wrote the override file: %v", err)
	}
	if code, body := post(`{"level":"debug","duration":"1m","component":"word"}`, good); code != 200 {
		t.Fatalf("POST /loglevel = %d %s", code, body)
	}
	o, err := loglevel.Read(filepath.Join(f.work, loglevel.FileName))
	if err != nil || o.Level != "debug" || o.Component != "word" || time.Until(o.Expires) > time.Minute || time.Until(o.Expires) < 30*time.Second {
		t.Errorf("override file %+v, %v", o, err)
	}
	code, body := raw(t, f.addr, "GET", "/loglevel", nil)
	if code != 200 || !strings.Contains(body, `"component":"word"`) {
		t.Errorf("GET /loglevel = %d %s", code, body)
	}
}
