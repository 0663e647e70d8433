package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// script writes an executable shell script.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "topology")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// processesWith returns the pids whose command line contains marker.
func processesWith(marker string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestDefineTimeout: a binary that does not define its topology in time
// is killed with the processes it started, and the error says so.
func TestDefineTimeout(t *testing.T) {
	marker := fmt.Sprintf("%d.%d", 600+os.Getpid()%100, time.Now().UnixNano()%1000)
	bin := script(t, "sleep "+marker+"\n")
	_, _, err := define(context.Background(), bin, nil, t.TempDir(), 300*time.Millisecond)
	if err == nil {
		t.Fatal("define of a hanging binary succeeded")
	}
	if want := "did not define its topology within 300ms and was killed"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if h := Hint(err); !strings.Contains(h, "--define-timeout") {
		t.Errorf("hint %q does not name --define-timeout", h)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error of more than one line: %q", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(processesWith("sleep\x00"+marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the binary's child still runs: %v", processesWith("sleep\x00"+marker))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDefineInterrupted: canceling submit is not reported as a timeout.
func TestDefineInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := define(ctx, script(t, "sleep 600\n"), nil, t.TempDir(), time.Hour)
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "within") {
		t.Errorf("define with a canceled context: %v", err)
	}
}

// goPanic is what the Go runtime prints for a panic in main.
const goPanic = `starting
panic: no brokers configured [recovered]
	panic: no brokers configured

goroutine 1 [running]:
panic({0x4b8e60?, 0x5302a0?})
	/usr/lib/go/src/runtime/panic.go:770 +0x132
runtime.gopanic(0x1)
	/usr/lib/go/src/runtime/panic.go:700 +0x10
main.mustBrokers(...)
	/home/me/topo/main.go:17
main.main()
	/home/me/topo/main.go:23 +0x25
exit status 2
`

func TestPanicOf(t *testing.T) {
	for _, tc := range []struct {
		name, out, value, where string
		ok                      bool
	}{
		{"panic", goPanic, "no brokers configured", "main.mustBrokers at /home/me/topo/main.go:17", true},
		{"fatal", "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\nmain.main()\n\t/x/main.go:9 +0x1d\n",
			"all goroutines are asleep - deadlock!", "main.main at /x/main.go:9", true},
		{"no trace", "panic: boom\n", "boom", "", true},
		{"no panic", "topology \"x\" is invalid (1 problems):\n  no spout\n", "", "", false},
	} {
		value, where, ok := panicOf(tc.out)
		if value != tc.value || where != tc.where || ok != tc.ok {
			t.Errorf("%s: panicOf = %q, %q, %v; want %q, %q, %v", tc.name, value, where, ok, tc.value, tc.where, tc.ok)
		}
	}
}

// exitErr runs a command that exits with code, for a real *exec.ExitError.
func exitErr(t *testing.T, code int) error {
	t.Helper()
	err := exec.Command("sh", "-c", fmt.Sprintf("exit %d", code)).Run()
	if err == nil {
		t.Fatal("sh exited 0")
	}
	return err
}

func TestDefineFailure(t *testing.T) {
	long := strings.Repeat("log line\n", maxOutputLines) + "the last word\n"
	for _, tc := range []struct {
		name     string
		code     int
		out      string
		want     string
		wantHint string
	}{
		{"panic", 2, goPanic, "crashed while defining its topology: no brokers configured (in main.mustBrokers at /home/me/topo/main.go:17)", "run EGRET_DEFINE_OUT=$(mktemp) ./t -x to see the stack trace"},
		{"usage", 2, "topology t has no flag -x (it takes only its own flags after --)\n", `refused its arguments ["-x"]: topology t has no flag -x`, ""},
		{"invalid", 1, "topology \"t\" is invalid (2 problems):\n  no spout\n  bad name\n", `failed to define its topology (exit status 1): topology "t" is invalid (2 problems): no spout; bad name`, ""},
		{"silent", 1, "", "failed to define its topology (exit status 1) and printed nothing", ""},
		{"logged panic", 1, "recovered: panic: in a plugin\npanic: not ours\nexiting\n", "failed to define its topology (exit status 1): recovered: panic: in a plugin; panic: not ours; exiting", ""},
		{"long", 1, long, "failed to define its topology (exit status 1): the last word", fmt.Sprintf("it printed %d lines", maxOutputLines+1)},
	} {
		err := defineFailure("./t", []string{"-x"}, exitErr(t, tc.code), tc.out)
		if !IsBadInput(err) {
			t.Errorf("%s: not bad input: %v", tc.name, err)
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q; want one line containing %q", tc.name, err, tc.want)
		}
		if h := Hint(err); tc.wantHint == "" && h != "" || !strings.Contains(h, tc.wantHint) {
			t.Errorf("%s: hint %q; want %q", tc.name, h, tc.wantHint)
		}
	}
}

func TestBuildFailure(t *testing.T) {
	out := "# example.com/topo\n./main.go:10:2: undefined: foo\n./main.go:11:2: undefined: bar\n"
	err := buildFailure("./topo", "linux", "amd64", exitErr(t, 1), out)
	if want := "build topology package ./topo for linux/amd64: ./main.go:10:2: undefined: foo"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if h := Hint(err); !strings.Contains(h, "go build ./topo shows all 2 lines") {
		t.Errorf("hint %q", h)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"--sentences": "--sentences", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "/tmp/x.defn": "/tmp/x.defn",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
