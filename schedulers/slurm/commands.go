package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// runner runs the Slurm commands, each bounded by the command timeout (a
// command against a controller that does not answer retries for a long
// time).
type runner struct {
	timeout time.Duration
	// env, when not nil, is the environment of every command (tests point
	// SLURM_CONF at their cluster through the process environment).
	env []string
	// keys names the config key of each command path, for errors.
	keys map[string]string
}

// cmdError is a Slurm command that failed: its own words, on one line.
type cmdError struct {
	cmd    string
	msg    string
	code   int
	killed bool
	// timeout and key say how long the command had.
	timeout time.Duration
	key     string
}

func (e *cmdError) Error() string {
	if e.killed {
		return fmt.Sprintf("%s did not answer within %s (%s): is slurmctld up and reachable?%s", e.cmd, e.timeout, e.key, suffix(e.msg))
	}
	return fmt.Sprintf("%s failed (exit %d)%s", e.cmd, e.code, suffix(e.msg))
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// run runs the command path with args and stdin, and returns its standard
// output.
func (r *runner) run(ctx context.Context, path, stdin string, args ...string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, path, args...)
	cmd.WaitDelay = 2 * time.Second
	if r.env != nil {
		cmd.Env = r.env
	}
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err == nil {
		return out.String(), nil
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	name := path
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	e := &cmdError{cmd: name, msg: oneLine(errb.String() + "\n" + out.String()), killed: cctx.Err() != nil, timeout: r.timeout, key: KeyCommandTimeout}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		e.code = ee.ExitCode()
	case !e.killed:
		return "", fmt.Errorf("run %s: %w (check %s)", path, err, r.keys[path])
	}
	return "", e
}

// oneLine joins the lines of Slurm's messages with "; ", dropping the
// "sbatch: error: " style prefixes and blank lines.
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		for _, p := range []string{"sbatch: ", "squeue: ", "scancel: ", "scontrol: ", "srun: "} {
			l = strings.TrimPrefix(l, p)
		}
		l = strings.TrimPrefix(l, "error: ")
		if l != "" && !slices.Contains(parts, l) {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// field returns the value of key in one line of `scontrol show ... -o`
// (key=value pairs separated by spaces; values used here hold none).
func field(line, key string) string {
	re := regexp.MustCompile(`(?:^|\s)` + regexp.QuoteMeta(key) + `=(\S*)`)
	if m := re.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

// fieldInt is field as an int (0 when absent or not a number).
func fieldInt(line, key string) int64 {
	v := field(line, key)
	if i := strings.IndexAny(v, "(,"); i >= 0 {
		v = v[:i]
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}
