package auroratest

import "syscall"

// sysProcAttr puts a task process in its own process group and kills it
// when the fake's process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
