//go:build unix && !linux

package auroratest

import "syscall"

// sysProcAttr puts a task process in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
