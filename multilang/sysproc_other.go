//go:build !linux

package multilang

import "syscall"

// sysProcAttr: without Pdeathsig, a subprocess notices its instance's end
// when its stdin closes.
func sysProcAttr() *syscall.SysProcAttr { return nil }
