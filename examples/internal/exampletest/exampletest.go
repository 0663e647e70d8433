// Package exampletest runs an example topology binary as a real process
// with --local and waits on what it prints, for the examples' tests.
package exampletest

import (
	"bufio"
	"io"

	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is a running example binary.
type Proc struct {
	t     *testing.T
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	more  chan struct{} // closed and replaced on every new line
	done  chan struct{} // closed when stdout ends
	err   strings.Builder
}

// Build builds the Go package pkg (a path relative to the test's
// directory, such as ".") into a temporary directory.
func Build(t *testing.T, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg)+".bin")
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// Start runs bin with args; the process is stopped when the test ends.
func Start(t *testing.T, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{t: t, cmd: exec.Command(bin, args...), more: make(chan struct{}), done: make(chan struct{})}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &syncWriter{p: p}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.read(stdout)
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

type syncWriter struct{ p *Proc }

func (w *syncWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.err.Write(b)
}

func (p *Proc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		p.mu.Lock()
		p.lines = append(p.lines, sc.Text())
		close(p.more)
		p.more = make(chan struct{})
		p.mu.Unlock()
	}
	close(p.done)
}

// Lines returns what the process printed so far, line by line.
func (p *Proc) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// WaitFor waits until cond holds on the printed lines, failing the test
// after timeout or when the process ends first.
func (p *Proc) WaitFor(what string, timeout time.Duration, cond func(lines []string) bool) []string {
	p.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		lines, more := append([]string(nil), p.lines...), p.more
		p.mu.Unlock()
		if cond(lines) {
			return lines
		}
		select {
		case <-more:
		case <-p.done:
			if l := p.Lines(); cond(l) {
				return l
			}
			p.t.Fatalf("the process ended before %s; stdout:\n%s\nstderr:\n%s", what, strings.Join(p.Lines(), "\n"), p.stderr())
		case <-deadline.C:
			p.t.Fatalf("timed out after %v waiting for %s; stdout:\n%s\nstderr:\n%s", timeout, what, strings.Join(p.Lines(), "\n"), p.stderr())
		}
	}
}

func (p *Proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err.String()
}

// Stop interrupts the process (a graceful stop with --local) and waits
// for it; it fails the test on a non-zero exit.
func (p *Proc) Stop() []string {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("exit: %v; stderr:\n%s", err, p.stderr())
	}
	return p.Lines()
}

// Prefixed returns the lines starting with prefix, without it.
func Prefixed(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			out = append(out, rest)
		}
	}
	return out
}
