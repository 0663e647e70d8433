// Package cli is the egret command line (cobra): the topology operations
// (submit, kill, activate, deactivate, restart, update, list), config
// validation, the package server, and the hidden daemon commands the
// containers run (executor, tmanager, stmgr, metricsmgr, scheduler).
//
// Exit codes: 0 success; 1 the operation failed; 2 bad usage or input
// (arguments, flags, config, topology definition).
package cli
