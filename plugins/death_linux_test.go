package plugins_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/egret-stream/egret/plugins"
)

// A plugin must not outlive its host. go-plugin itself does not notice the
// death of the host (a plugin whose host was SIGKILLed keeps serving), so
// the loader sets a parent-death signal and plugins watch their parent.
// Each mechanism is tested alone: the host helper (this test binary
// re-executed) loads a plugin, prints its pid and is SIGKILLed.
func TestPluginDiesWithHost(t *testing.T) {
	dir := pluginDir(t, [2]string{"statemgr", "memory"})
	// Orphaned plugins are re-parented to this process instead of init, so
	// that the test reaps them and leaves no zombies behind.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("become a child subreaper: %v", err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	for _, tc := range []struct {
		name                string
		pdeathsig, watchdog bool
	}{
		{"parent death signal only", true, false},
		{"plugin watchdog only", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			pd := "0"
			if tc.pdeathsig {
				pd = "1"
			}
			// TMPDIR: the killed host cannot remove its plugin's socket
			// directory; let the test's temporary directory hold it.
			cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir(), envHostDir+"="+dir, envHostPdeathsig+"="+pd,
				plugins.EnvWatchParent+"="+strconv.FormatBool(tc.watchdog))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

			pidCh := make(chan int, 1)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if s, ok := strings.CutPrefix(sc.Text(), hostPidPrefix); ok {
						if pid, err := strconv.Atoi(s); err == nil {
							pidCh <- pid
							return
						}
					}
				}
				close(pidCh)
			}()
			var pid int
			select {
			case p, ok := <-pidCh:
				if !ok {
					t.Fatalf("host helper printed no plugin pid; stderr:\n%s", stderr.String())
				}
				pid = p
			case <-time.After(time.Minute):
				t.Fatalf("host helper printed no plugin pid within a minute; stderr:\n%s", stderr.String())
			}
			t.Cleanup(func() {
				if alive(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				reap(pid)
			})
			if !alive(pid) {
				t.Fatalf("plugin %d is not running while its host is", pid)
			}

			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("plugin %d still runs 10s after its host was killed", pid)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// reap collects the exit status of pid if it became this process's child
// (see PR_SET_CHILD_SUBREAPER) and has exited.
func reap(pid int) {
	var ws syscall.WaitStatus
	for {
		n, err := syscall.Wait4(pid, &ws, 0, nil)
		if n == pid || !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return true
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}
