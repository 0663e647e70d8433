// Package hostaddr says which address a container's daemons advertise and
// listen on, from the environment a resource manager sets (EGRET_HOST,
// EGRET_BIND_HOST, EGRET_PORT_*): the egret daemons and the process of a
// process-per-container topology read it the same way.
package hostaddr
