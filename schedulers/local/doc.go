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
// The service publishes its address (and pid) in W/scheduler.json and
// records each executor (pid and start time) in W/container-<i>/executor.json.
//
// Executors are not tied to the service's life: when the service dies
// (kill -9, a crash), the containers keep running and the topology keeps
// processing data, but nothing restarts a container that dies. Probe
// (spi.Prober) reports the dead service, so `egret list` shows it and
// `egret update` refuses to start. Restart starts a new service first; it
// adopts the executors that still run (following them by pid and start
// time) and starts the others. Kill stops executors whose service is gone.
// A service stopped gracefully (SIGTERM, /kill) stops its executors.
//
// Kill removes the working directory, so every operation first checks the
// topology name it is given (core/names) and that the working directory has
// no ".." element and names that topology (the template must hold
// ${TOPOLOGY}); otherwise it refuses before touching a file.
package local
