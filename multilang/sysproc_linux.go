package multilang

import "syscall"

// sysProcAttr kills the subprocess when the instance dies, even by
// SIGKILL: a component never outlives its instance.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
