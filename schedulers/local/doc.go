// Package local is the scheduler of the `local` and `localzk` clusters: it
// runs a topology's containers as process trees on this machine.
//
// It works in service mode, like Heron's local scheduler. Submit calls
// Launch, which writes the job into the topology's working directory
// (egret.scheduler.local.working.directory) and starts a detached
// `egret scheduler --work-dir W` process. That service (Serve) starts one
// `egret executor` per container (0..N) in W/container-<i>, restarts a dead
// executor with exponential backoff, and serves, on 127.0.0.1, the HTTP
// endpoints the CLI's kill, restart and update use:
//
//	POST /kill                  stop every executor and exit
//	POST /restart?container=N   restart one container (all without N)
//	POST /update                body: the new job (JSON); start and stop containers
//	GET  /status                containers, pids and restart counts (JSON)
//
// The service publishes its address in W/scheduler.json. Executors are
// started with a parent-death signal, so a service that dies takes its
// containers with it, and kill of a topology whose service is gone only has
// to clean up.
//
// Kill removes the working directory, so every operation first checks the
// topology name it is given (core/names) and that the working directory has
// no ".." element and names that topology (the template must hold
// ${TOPOLOGY}); otherwise it refuses before touching a file.
package local
