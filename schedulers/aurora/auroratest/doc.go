// Package auroratest is a fake Apache Aurora scheduler with one agent, for
// tests. Aurora is retired to the Apache attic and no scheduler can run
// here, so Egret's Aurora scheduler is tested against this fake.
//
// # The API
//
// The fake serves POST /api with the Thrift JSON protocol (and the binary
// protocol for application/vnd.apache.thrift.binary), as Aurora's
// scheduler does, and implements exactly the calls Egret makes, with the
// response codes and messages of Aurora 0.22's SchedulerThriftInterface
// and ConfigurationManager:
//
//	createJob               job key and environment (^(prod|devel|test|staging\d*)$)
//	                        checked, executor AuroraExecutor required, resources
//	                        positive, "Job <role>/<env>/<name> already exists"
//	killTasks               active tasks of the job (or of the instances) → KILLING,
//	                        OK with "No tasks to kill." when there are none
//	restartShards           INVALID_REQUEST "Not all requested shards are active."
//	                        unless every instance is active; each → RESTARTING
//	addInstances            copies the task config of the given instance to
//	                        instances after the highest active one
//	getTasksWithoutConfigs  filters by job keys, role/env/name, task ids,
//	                        statuses and instance ids; executor data left out
//	getPendingReason        "Insufficient: CPU" (RAM, disk) per pending task that
//	                        does not fit the agent
//
// Every response carries ServerInfo.clusterName. With WithCredentials the
// API wants HTTP basic authentication (401 with a Basic challenge
// otherwise) and a user may only act on its roles (AUTH_FAILED
// otherwise). Stop and Start take the API down and up again on the same
// address while the tasks keep running, as in a scheduler failover;
// Unavailable(n) answers the next n requests with HTTP 503, as a scheduler
// without a leader does.
//
// # The agent
//
// Tasks really run. A PENDING task that fits the agent's capacity is
// assigned, gets a free port for each named port it asks for and a
// sandbox <root>/<task id>/sandbox, and runs Thermos-like: the task's
// ExecutorConfig.data is read as a Thermos job (package thermos), the
// mustache references {{mesos.instance}}, {{mesos.hostname}},
// {{thermos.task_id}} and {{thermos.ports[name]}} are bound, and the
// processes run one after another (in the order of the task's
// constraint) with bash -c in the sandbox, each in its own process group,
// stdout and stderr in .logs/<process>/0/. The task is RUNNING once its
// processes started, FAILED when one exits non-zero ("Task failed."),
// FINISHED when all exited 0. A role without a Unix account on the agent
// (WithUsers) fails the task at sandbox creation with Thermos's message.
// Killing a task sends SIGTERM to its process group and SIGKILL after the
// task's finalization_wait. A service task that ends by itself is
// rescheduled as a new task of the same instance (THROTTLED for the
// reschedule delay, then PENDING); a restarted one at once.
//
// KillTask kills an instance's processes with SIGKILL (a fault); Close
// kills every task and waits until its processes are gone.
package auroratest
