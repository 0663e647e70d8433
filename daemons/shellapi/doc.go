// Package shellapi is the contract of a container's shell: the pid file
// the executor writes and the shell serves (GET /processes), the process
// kinds and states in it, and the headers of a log read that the tracker
// and the CLI read. The executor, the shell and the tracker import it
// instead of each other.
package shellapi
