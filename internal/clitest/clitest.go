package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// CLI runs the egret binary Egret with EGRET_HOME=Home and, before every
// command, --config-property for each of Props.
type CLI struct {
	T     testing.TB
	Egret string
	Home  string
	Props []string
	// Dir is the working directory (default: the repository's root, so
	// that ./examples/... resolves).
	Dir string
	// Env is the environment (default: this process's).
	Env []string
	// Timeout bounds one command (default 5 minutes).
	Timeout time.Duration
}

// With returns a copy of c with more config properties.
func (c *CLI) With(props ...string) *CLI {
	d := *c
	d.Props = append(append([]string(nil), c.Props...), props...)
	return &d
}

// Run runs egret with args and returns its stdout, stderr and exit code
// (-1 when it could not run or timed out).
func (c *CLI) Run(args ...string) (string, string, int) {
	c.T.Helper()
	var full []string
	for _, p := range c.Props {
		full = append(full, "--config-property", p)
	}
	full = append(full, args...)
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Egret, full...)
	cmd.Dir = c.Dir
	if cmd.Dir == "" {
		cmd.Dir = RepoRoot(c.T)
	}
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], "EGRET_HOME="+c.Home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return out.String(), errb.String(), code
}

// Must runs egret with args and fails the test unless it exits 0; it
// returns stdout.
func (c *CLI) Must(args ...string) string {
	c.T.Helper()
	out, errOut, code := c.Run(args...)
	if code != 0 {
		c.T.Fatalf("egret %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// Executed sums instance.executed over the components of a topology
// (`egret metrics <cluster> <topology> -o json`); -1 when it cannot be
// read.
func (c *CLI) Executed(cluster, topology string) float64 {
	out, _, code := c.Run("metrics", cluster, topology, "-o", "json")
	if code != 0 {
		return -1
	}
	var st struct {
		Components map[string]map[string]float64 `json:"components"`
	}
	if json.Unmarshal([]byte(out), &st) != nil {
		return -1
	}
	var n float64
	for _, m := range st.Components {
		n += m["instance.executed"]
	}
	return n
}

// RepoRoot returns the module's root: the nearest directory above the
// test's working directory holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// WaitFor polls cond every poll until it holds, failing the test after
// timeout.
func WaitFor(t testing.TB, what string, timeout, poll time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(poll)
	}
}
