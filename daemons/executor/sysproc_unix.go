//go:build unix && !linux

package executor

import "syscall"

// sysProcAttr puts a child in its own process group. Without Linux's
// Pdeathsig, children outlive an executor that is SIGKILLed.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// intoCgroup is Linux only.
func intoCgroup(*syscall.SysProcAttr, int) bool { return false }
