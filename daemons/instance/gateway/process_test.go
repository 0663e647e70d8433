package gateway_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/stmgr/stmgrtest"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

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

// exitCode waits for cmd and returns its exit code.
func exitCode(t *testing.T, cmd *exec.Cmd, timeout time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		t.Fatalf("%s did not exit within %s", cmd.Path, timeout)
		return -1
	}
}

// TestInstanceModeProcess runs a real topology binary in instance mode
// (runner.Main --instance) against a fake stream manager: it registers with
// its pid, sends its tuples, follows a rescale live, exits with code 3
// when a plan moves its task and with 0 on SIGTERM; a bad command line exits with 2.
func TestInstanceModeProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a topology binary")
	}
	dir := shortDir(t)
	bin := filepath.Join(dir, "counttopo")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/counttopo").CombinedOutput(); err != nil {
		t.Fatalf("build the test topology: %v\n%s", err, out)
	}
	defn := filepath.Join(dir, "count.defn")
	if out, err := exec.Command(bin, "--define", defn).CombinedOutput(); err != nil {
		t.Fatalf("define: %v\n%s", err, out)
	}
	data, err := os.ReadFile(defn)
	if err != nil {
		t.Fatal(err)
	}
	logical, err := topology.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	logical.ID = "proc-1"
	pp := stmgrtest.PlanFor(logical, allInOne)
	pp.State = egretpb.TopologyState_TOPOLOGY_STATE_RUNNING
	pp.Version = 1
	f := startFakeStMgr(t, filepath.Join(dir, "s.sock"), pp)

	t.Run("bad command line", func(t *testing.T) {
		cmd := exec.Command(bin, "--instance", "--task", "1")
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if code := exitCode(t, cmd, 20*time.Second); code != 2 {
			t.Fatalf("exit code %d, want 2; stderr:\n%s", code, stderr.String())
		}
		if !bytes.Contains([]byte(stderr.String()), []byte("--stmgr-socket is required")) {
			t.Errorf("stderr does not say what is missing:\n%s", stderr.String())
		}
	})

	start := func(t *testing.T, task string, env ...string) (*exec.Cmd, *syncBuffer) {
		cmd := exec.Command(bin, "--instance", "--task", task, "--container", "1", "--topology-id", "proc-1",
			"--stmgr-socket", f.path, "--metrics-socket", filepath.Join(dir, "absent.sock"))
		cmd.Env = append(os.Environ(), env...)
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd, &stderr
	}

	t.Run("rescale followed live, move exits 3", func(t *testing.T) {
		cmd, stderr := start(t, "1", "COUNT_LIMIT=1000000000")
		var req *egretpb.RegisterInstanceRequest
		select {
		case req = <-f.regs:
		case <-time.After(20 * time.Second):
			t.Fatalf("no registration; stderr:\n%s", stderr.String())
		}
		if req.GetPid() != int32(cmd.Process.Pid) || req.GetTaskId() != 1 || req.GetTopologyId() != "proc-1" {
			t.Errorf("registration %v from pid %d", req, cmd.Process.Pid)
		}
		conn := f.next(t)
		br := bufio.NewReader(conn)
		var buf []byte
		// readUntil reads data frames until done says so.
		readUntil := func(what string, done func(dest uint32, n int) bool) {
			t.Helper()
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			for {
				ft, payload, nb, err := wire.ReadFrame(br, buf, wire.DefaultMaxFrame)
				buf = nb
				if err != nil {
					t.Fatalf("waiting for %s: %v; stderr:\n%s", what, err, stderr.String())
				}
				if ft == wire.FrameData {
					dest, n, _, _ := wire.ParseDataFrame(payload)
					if dest != 2 && dest != 3 && dest != 4 {
						t.Fatalf("a frame for task %d, which is not a sink task", dest)
					}
					if done(dest, n) {
						return
					}
				}
			}
		}
		tuples := 0
		readUntil("1000 tuples", func(_ uint32, n int) bool { tuples += n; return tuples >= 1000 })

		// A third sink task (id 4): the spout routes to it without a
		// restart.
		scaled := logical.Clone()
		for i := range scaled.Components {
			if scaled.Components[i].Name == "sink" {
				scaled.Components[i].Parallelism = 3
			}
		}
		up := stmgrtest.PlanFor(scaled, allInOne)
		up.State, up.Version = egretpb.TopologyState_TOPOLOGY_STATE_RUNNING, 2
		if err := wire.WriteMessage(conn, &egretpb.NewPhysicalPlan{Pplan: up}); err != nil {
			t.Fatal(err)
		}
		readUntil("a tuple for the new task 4", func(dest uint32, _ int) bool { return dest == 4 })
		if cmd.ProcessState != nil {
			t.Fatalf("the instance exited on a rescale that keeps its task")
		}

		// Moving the instance's own task to another container restarts it.
		moved := stmgrtest.PlanFor(scaled, func(task int) int {
			if task == 1 {
				return 2
			}
			return 1
		})
		moved.State, moved.Version = egretpb.TopologyState_TOPOLOGY_STATE_RUNNING, 3
		if err := wire.WriteMessage(conn, &egretpb.NewPhysicalPlan{Pplan: moved}); err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = io.Copy(io.Discard, br) }()
		if code := exitCode(t, cmd, 20*time.Second); code != 3 {
			t.Fatalf("exit code %d, want 3; stderr:\n%s", code, stderr.String())
		}
		if !strings.Contains(stderr.String(), "without a restart") {
			t.Errorf("the instance did not log the live layout change; stderr:\n%s", stderr.String())
		}
	})

	t.Run("SIGTERM exits 0", func(t *testing.T) {
		cmd, stderr := start(t, "2")
		select {
		case <-f.regs:
		case <-time.After(20 * time.Second):
			t.Fatalf("no registration; stderr:\n%s", stderr.String())
		}
		f.next(t)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := exitCode(t, cmd, 20*time.Second); code != 0 {
			t.Fatalf("exit code %d, want 0; stderr:\n%s", code, stderr.String())
		}
	})
}
