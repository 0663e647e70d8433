//go:build !linux

package plugins

import "os/exec"

// setParentDeathSignal does nothing outside Linux; the plugin-side parent
// watchdog stops plugins whose host died.
func setParentDeathSignal(*exec.Cmd) {}
