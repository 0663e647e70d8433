package executor

import "syscall"

// sysProcAttr puts a child in its own process group (so a signal reaches
// everything it forked) and has the kernel SIGKILL it when the executor
// dies. Pdeathsig fires when the forking thread exits; Go only ends threads
// of goroutines that exit while locked to them, which the executor never
// does, so the signal effectively follows the executor process.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// intoCgroup makes the child start inside the cgroup v2 directory fd
// (clone3 with CLONE_INTO_CGROUP, Linux 5.7), so no instant of it runs
// outside its limits.
func intoCgroup(attr *syscall.SysProcAttr, fd int) bool {
	attr.UseCgroupFD = true
	attr.CgroupFD = fd
	return true
}
