package procinfo

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestAlive(t *testing.T) {
	start, ok := Start(os.Getpid())
	if !ok {
		t.Skip("no /proc")
	}
	if !Alive(os.Getpid(), start) || !Alive(os.Getpid(), "") {
		t.Error("this process is not alive")
	}
	if Alive(os.Getpid(), start+"1") {
		t.Error("a process with another start time counts as this one (a reused pid)")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip("no true(1)")
	}
	pid := cmd.Process.Pid
	// Until it is reaped, the exited child is a zombie, which is gone.
	deadline := time.Now().Add(time.Minute)
	for Alive(pid, "") {
		if time.Now().After(deadline) {
			t.Fatal("an exited, unreaped child still counts as alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Wait()
	if Alive(pid, "") || Alive(0, "") || Alive(-1, "") {
		t.Error("a dead or invalid pid counts as alive")
	}
}

func TestWithFlag(t *testing.T) {
	dir := t.TempDir()
	// The shell waits in its read builtin: it forks no child, which would
	// carry the same command line until it execs (sh -c "sleep 600" did, and
	// a loaded machine saw both).
	cmd := exec.Command("sh", "-c", "read x", "sh", "--work-dir", dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = stdin.Close(); _ = cmd.Wait() }()
	got := WithFlag("--work-dir", dir)
	st, _ := Start(cmd.Process.Pid)
	if len(got) != 1 || got[cmd.Process.Pid] != st {
		t.Fatalf("WithFlag(--work-dir, %s) = %v, want {%d: %s}", dir, got, cmd.Process.Pid, st)
	}
	if got := WithFlag("--work-dir", dir+"x"); len(got) != 0 {
		t.Fatalf("WithFlag of another directory = %v, want none", got)
	}
}
