package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/egret-stream/egret/core/topobin"
	"github.com/egret-stream/egret/core/topology"
)

// DefaultDefineTimeout bounds how long a topology binary may take to
// define its topology (SubmitOptions.DefineTimeout).
const DefaultDefineTimeout = 2 * time.Minute

// maxOutputLines is the longest output of a failed topology binary quoted
// whole in the error; longer output is summed up by its last line.
const maxOutputLines = 10

// hinted is an error with a hint: what to run or change to learn more.
// Its message stays one line; the CLI prints the hint on a line of its
// own.
type hinted struct {
	error
	hint string
}

func (e hinted) Unwrap() error { return e.error }

func withHint(err error, format string, args ...any) error {
	return hinted{err, fmt.Sprintf(format, args...)}
}

// Hint returns the hint attached to err, or "".
func Hint(err error) string {
	var h hinted
	if errors.As(err, &h) {
		return h.hint
	}
	return ""
}

// define runs the topology binary in define mode and reads the definition.
// A binary that runs longer than timeout is killed.
func define(ctx context.Context, binary string, args []string, tmp string, timeout time.Duration) (*topology.Topology, string, error) {
	if timeout <= 0 {
		timeout = DefaultDefineTimeout
	}
	defn := filepath.Join(tmp, PackageDefinition)
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, binary, args...)
	cmd.Env = append(os.Environ(), topobin.DefineEnv+"="+defn)
	// On timeout or interrupt the binary is killed with every process it
	// started (its own process group); WaitDelay bounds the wait for a
	// straggler that escaped the group and holds the output open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, "", fmt.Errorf("define the topology: %w", ctx.Err())
		case runCtx.Err() != nil:
			return nil, "", withHint(
				fmt.Errorf("topology binary %s did not define its topology within %s and was killed", binary, timeout),
				"does its main block or wait before calling runner.Main? A slow machine needs a longer --define-timeout")
		}
		return nil, "", defineFailure(binary, args, err, string(out))
	}
	b, err := os.ReadFile(defn)
	if err != nil {
		return nil, "", badInput(fmt.Errorf("topology binary %s wrote no definition: does its main call runner.Main (package api/runner)? (%w)", binary, err))
	}
	t, err := topology.Unmarshal(b)
	if err != nil {
		return nil, "", badInput(err)
	}
	if err := topology.Validate(t); err != nil {
		return nil, "", badInput(errors.New(oneLine(err.Error())))
	}
	if err := topology.CheckEffectivelyOnce(t); err != nil {
		return nil, "", badInput(err)
	}
	return t, defn, nil
}

// defineFailure describes a topology binary that failed in define mode in
// one line: a panic by its value and the function it came from, refused
// arguments, or the binary's own message.
func defineFailure(binary string, args []string, err error, out string) error {
	words := []string{topobin.DefineEnv + "=$(mktemp)"}
	for _, w := range append([]string{binary}, args...) {
		words = append(words, shellQuote(w))
	}
	rerun := strings.Join(words, " ")
	var ee *exec.ExitError
	usage := errors.As(err, &ee) && ee.ExitCode() == topobin.ExitUsage // also how Go exits on a panic
	if value, where, ok := panicOf(out); ok && usage {
		msg := fmt.Sprintf("topology binary %s crashed while defining its topology: %s", binary, value)
		if where != "" {
			msg += " (in " + where + ")"
		}
		return badInput(withHint(errors.New(msg), "run %s to see the stack trace", rerun))
	}
	what := fmt.Sprintf("failed to define its topology (%v)", err)
	if usage {
		what = fmt.Sprintf("refused its arguments %q", args)
	}
	lines := nonEmptyLines(out)
	switch {
	case len(lines) == 0:
		return badInput(fmt.Errorf("topology binary %s %s and printed nothing", binary, what))
	case len(lines) <= maxOutputLines:
		return badInput(fmt.Errorf("topology binary %s %s: %s", binary, what, oneLine(out)))
	default:
		return badInput(withHint(fmt.Errorf("topology binary %s %s: %s", binary, what, lines[len(lines)-1]),
			"it printed %d lines; run %s to see them", len(lines), rerun))
	}
}

// panicOf finds a Go panic or fatal runtime error in the output of a
// crashed program: its value (the first line of it) and the first
// function of the crashing goroutine outside the runtime, with its file
// and line.
func panicOf(out string) (value, where string, ok bool) {
	lines := strings.Split(out, "\n")
	start := -1
	for i, l := range lines {
		if v, found := strings.CutPrefix(l, "panic: "); found {
			value, start = v, i
			break
		}
		if v, found := strings.CutPrefix(l, "fatal error: "); found {
			value, start = v, i
			break
		}
	}
	if start < 0 {
		return "", "", false
	}
	value = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "[recovered]"))
	for i := start + 1; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "goroutine ") {
			continue
		}
		// Frames follow as pairs: "pkg.Func(args)" and "\tfile:line +0x..".
		for j := i + 1; j+1 < len(lines) && strings.HasPrefix(lines[j+1], "\t"); j += 2 {
			fn := lines[j]
			if fn == "" || strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "panic(") {
				continue
			}
			if k := strings.LastIndex(fn, "("); k > 0 {
				fn = fn[:k]
			}
			file, _, _ := strings.Cut(strings.TrimSpace(lines[j+1]), " +0x")
			return value, fn + " at " + file, true
		}
		break
	}
	return value, "", true
}

// shellQuote quotes s for a POSIX shell unless it is made of characters
// that need no quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,+-@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func nonEmptyLines(s string) []string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// oneLine joins the non-empty lines of s into one: a line ending in a
// colon is followed by a space, any other by "; ".
func oneLine(s string) string {
	var b strings.Builder
	prev := ""
	for _, l := range nonEmptyLines(s) {
		switch {
		case prev == "":
		case strings.HasSuffix(prev, ":"):
			b.WriteString(" ")
		default:
			b.WriteString("; ")
		}
		b.WriteString(l)
		prev = l
	}
	return b.String()
}
