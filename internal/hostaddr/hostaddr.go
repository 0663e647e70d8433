package hostaddr

import (
	"net"
	"os"
	"strconv"
)

// Advertised is the address other containers reach this one at: the
// EGRET_HOST environment variable, else the host name when it resolves,
// else the loopback address.
func Advertised() string {
	if h := os.Getenv("EGRET_HOST"); h != "" {
		return h
	}
	if h, err := os.Hostname(); err == nil {
		if _, err := net.LookupHost(h); err == nil {
			return h
		}
	}
	return "127.0.0.1"
}

// Bind is the interface the daemons listen on: the EGRET_BIND_HOST
// environment variable (a resource manager sets it to the address it gave
// the container's ports, e.g. ${NOMAD_IP_stmgr}), else every interface.
func Bind() string { return os.Getenv("EGRET_BIND_HOST") }

// EnvPort reads a port a resource manager assigned to this container (for
// example EGRET_PORT_TMANAGER=${NOMAD_PORT_tmanager}); 0 when unset.
func EnvPort(name string) int {
	p, err := strconv.Atoi(os.Getenv(name))
	if err != nil || p < 0 || p > 65535 {
		return 0
	}
	return p
}
