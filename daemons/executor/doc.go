// Package executor is the executor daemon (`egret executor`): the entry
// point of every container. It fetches and extracts the topology package,
// starts the container's processes, restarts those that die, follows the
// packing plan, and stops everything on SIGTERM (the cmd layer cancels the
// context of Run).
//
// # Package
//
// The package on the command line (Config.PackageURI, PackageSHA256) is
// what the container runs unless the execution state in the state manager
// names another one for it (egret upgrade: its entry in
// container_packages, else current_package; state.ContainerPackage). The
// state manager is reached with the cluster config of the package already
// extracted in W (a restarted container), else of the command line's;
// then the package the state names is fetched and extracted (unless
// W/package.sha256 has its digest already) and its cluster config used.
// Without an execution state, or with one of another topology id, the
// command line's package is used; an unreadable execution state, or an
// entry without URI or digest, stops the executor with an error.
//
// # Process tree
//
//	container 0:   egret executor
//	               ├── egret tmanager
//	               ├── egret metricsmgr
//	               └── egret shell
//	container i≥1: egret executor
//	               ├── egret metricsmgr
//	               ├── egret shell
//	               ├── egret stmgr                (once i is in the packing plan)
//	               └── W/package/topology --instance ...   (one per task of i)
//
// The shell (daemons/shell) serves the container's logs and process
// status over HTTP and kills a process on request (with the topology's
// secret); the executor restarts a killed process like any other.
//
// # Command lines
//
// One function per process kind builds each command line (TManagerArgs,
// MetricsMgrArgs, StmgrArgs, CkptMgrArgs, ShellArgs, InstanceArgs); the cobra commands of cli/ must
// accept exactly these flags. Every path is passed explicitly; daemons
// derive none.
//
//	egret tmanager   --topology N --topology-id ID --config F
//	egret metricsmgr --topology N --container C --socket M --metrics-file W/metrics.jsonl --config F
//	egret stmgr      --topology N --topology-id ID --container C --socket S --port P --metrics-socket M --config F
//	egret ckptmgr    --topology N --container C --socket K --metrics-socket M --config F   (effectively-once)
//	egret shell      --topology N --topology-id ID --container C --work-dir W --config F
//	W/package/topology --instance --task T --container C --topology-id ID --stmgr-socket S --metrics-socket M --config F
//
// F is the resolved cluster config (Config.ConfigFile, default
// W/package/cluster.json), S, M and K the sockets below, P Config.StmgrPort
// (0: any). Daemons run with W as their working directory, instances with
// W/instances/<name>; all with the executor's environment plus
// Config.ExtraEnv, and instances with GOMAXPROCS and GOMEMLIMIT from their
// share of the packing plan (see Resource isolation). Every child also
// gets EGRET_LOGLEVEL_FILE=W/loglevel.json, EGRET_PROCESS=<name> and
// EGRET_COMPONENT=<component, or the daemon's kind>: it polls that file
// for live log-level overrides (internal/loglevel, egret loglevel).
//
// # Working directory W
//
//	W/package/            the extracted package: topology, topology.defn, cluster.json
//	W/package.sha256      digest of the extracted package; a restarted executor with
//	                      the same digest reuses W/package without fetching
//	W/package.tar.gz      the download, removed once extracted
//	W/logs/<name>.log     stdout+stderr of each child, appended across restarts;
//	                      <name> is tmanager, metricsmgr, stmgr, shell or
//	                      instance-<component>-<task>. The executor copies the
//	                      output through a pipe and rotates the file at
//	                      egret.logging.max.size (100MiB) to <name>.log.1 ...
//	                      .N, N = egret.logging.max.files (5)
//	W/pids.json           {"executor": pid, "processes": {name: pid}, "status": [ProcessStatus...]},
//	                      rewritten atomically whenever a child starts or ends;
//	                      the shell serves the status (state, restarts) from it
//	W/loglevel.json       the live log-level override the shell writes
//	                      (internal/loglevel); absent until egret loglevel
//	W/instances/<name>/   each instance's working directory; its disk use is
//	                      measured against the instance's disk share
//	W/metrics.jsonl       the metrics manager's file sink
//	W/stmgr.sock          the stream manager's socket for local instances
//	W/metricsmgr.sock     the metrics manager's socket
//
// When W is long enough that a socket path would exceed 100 bytes, both
// sockets go to $TMPDIR/egret-<hash of W>/ instead (removed on exit).
//
// # Supervision
//
// Each child is started in its own process group (Setpgid) with
// Pdeathsig=SIGKILL on Linux, so nothing survives the executor even when it
// is SIGKILLed. A child that exits is restarted after a backoff: it starts
// at egret.executor.restart.backoff.initial (1s), doubles after every
// restart up to egret.executor.restart.backoff.max (30s), and falls back to
// the initial value once a run lasted egret.executor.restart.reset.after
// (60s). An instance exiting with code 3 (core/topobin.ExitPlanChanged:
// its task layout changed) is restarted at once; if it exits with 3 again
// within the initial backoff, the ordinary backoff applies so it cannot spin. Stopping
// a child sends SIGTERM to its process group and SIGKILL after
// egret.executor.stop.grace (10s). There is no restart limit: a container
// keeps trying, and the restart counters (Executor.Status) show the churn.
//
// # Resource isolation
//
// Each instance gets what the packing plan gives it (docs/isolation.md):
// GOMAXPROCS = ceil(cpu), at least 1 (egret.instance.gomaxprocs
// overrides), GOMEMLIMIT = ram − MemoryMargin(ram), unless the variable is
// already in the environment. With egret.executor.cgroups=auto, where the
// executor may create cgroups (internal/cgroup: v2 delegated, or v1),
// every child gets its own group, instances with cpu.max and
// memory.max/high from the plan; otherwise the executor says so once (log,
// exception, metric executor.cgroups=0) and SIGKILLs an instance whose RSS
// exceeds its ram (the RSS watchdog). Every
// egret.executor.monitor.interval it reads the groups' counters, the RSS
// and the disk use of each instance's directory, and publishes resource.*
// metrics and queued exceptions to the metrics manager (source
// "executor"). An instance that died of its memory limit (cgroup OOM
// kill, watchdog, Go runtime out of memory) is restarted like any other,
// logged and reported as "task T (C) exceeded its memory limit of N MiB,
// restarted". The groups are removed when the executor stops.
//
// # Packing plan
//
// The executor watches /packingplans/<topology>. On a change it stops the
// instances no longer assigned to its container and starts the instances
// new to its container. The stream manager and the unchanged instances
// keep running: they follow the physical plan the topology manager builds
// for the new packing plan (an instance whose task moved to another
// container exits with code 3). In an effectively-once topology the
// executor restarts the stream manager instead, and its instances restart
// on the layout change, so the topology rolls back to its last checkpoint
// with the new task set. A container that
// is not yet in the plan runs only its metrics manager and waits; once it
// was in the plan and is removed, or when the plan is deleted (topology
// killed) or belongs to another topology id (resubmitted), the executor
// stops every child and Run returns nil.
package executor
