package procinfo

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Alive reports whether pid still runs and, when start is not empty, is
// the process that started at start (see Start). A zombie counts as gone.
// Without /proc it trusts kill(pid, 0).
func Alive(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	st, state, ok := stat(pid)
	if !ok {
		return true
	}
	if state == "Z" || state == "X" {
		return false
	}
	return start == "" || st == start
}

// Start returns a process's start time (an opaque token), or false where
// /proc is not available.
func Start(pid int) (string, bool) {
	st, _, ok := stat(pid)
	return st, ok
}

// stat returns field 22 (start time) and field 3 (state) of
// /proc/<pid>/stat.
func stat(pid int) (start, state string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", "", false
	}
	// "pid (comm) state ...": comm may contain spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", "", false
	}
	return f[19], f[0], true
}

// WithFlag returns the processes whose command line holds the argument
// flag followed by value ("--work-dir", "/x"), with their start times; an
// empty list where /proc is not available.
func WithFlag(flag, value string) map[int]string {
	out := map[int]string{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		for i := 0; i+1 < len(args); i++ {
			if args[i] == flag && args[i+1] == value {
				if st, ok := Start(pid); ok && Alive(pid, st) {
					out[pid] = st
				}
				break
			}
		}
	}
	return out
}
