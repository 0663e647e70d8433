package plugins

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel SIGKILL the plugin when the host
// dies. (Strictly: when the host thread that started it exits; Go threads
// outlive their goroutines, and the plugin-side watchdog covers the rest.)
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
