// Package proc holds the process checks the service-mode schedulers share
// (their CLI side watches the scheduler service's process).
package proc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// Alive reports whether pid runs. A zombie does not: a service orphaned by
// the CLI that launched it stays one after it exits wherever init does not
// reap (containers without an init process).
func Alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no procfs: trust kill(pid, 0)
	}
	// "pid (comm) state ...": comm may contain spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
