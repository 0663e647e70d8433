// Package aurora is Egret's scheduler for Apache Aurora, registered as
// "aurora" and also served as the plugin binary egret-scheduler-aurora.
//
// It works in library mode: every call (submit, kill, restart, update)
// talks to the Aurora scheduler's Thrift API (TJSONProtocol over HTTP POST
// <egret.aurora.scheduler.uri>/api, with HTTP basic authentication when a
// user is set) and keeps no state; later calls find the topology's job by
// its key, <role>/<env>/<topology>. The API's Go code is generated into
// auroraapi from a subset of Aurora's api.thrift.
//
// # The job
//
// A topology is one Aurora service job with one instance per container:
// instance 0 runs the topology manager, instance i container i of the
// packing plan. Aurora gives all instances of a job one task config, so its
// resources are the largest container's, and it asks for the named ports
// stmgr, tmanager and tmanager_http. The executor config is a Thermos job
// (package thermos) with the processes fetch_core (curl of
// egret.package.core.uri into the sandbox; left out when that is empty and
// egret is on the agents' PATH) and executor (`egret executor` for
// container {{mesos.instance}}, which fetches the topology package itself;
// the ports and {{mesos.hostname}} reach the daemons as EGRET_PORT_<NAME>
// and EGRET_HOST).
//
// # Operations
//
// Schedule checks that the job has no active task, creates it (createJob)
// and waits (egret.aurora.wait.timeout) until every instance is RUNNING;
// an instance that fails first, or does not run in time (with Aurora's
// pending reasons), fails the submission and the job is killed again.
// Kill calls killTasks, retrying transient failures
// (egret.aurora.kill.max.attempts), and waits until no task is active.
// Restart calls restartShards for one instance or all. Update, and
// AddContainers/RemoveContainers (spi.Scalable), kill the instances of
// removed containers (killTasks, then wait) and add new ones
// (addInstances from instance 0's task config); a plan that would need
// bigger instances fails with spi.ErrUnsupported before anything changes.
// Every response's cluster name must be egret.aurora.cluster. JobLinks
// gives the job's page in the scheduler UI; RenderJob the Thermos job as
// `aurora job create --read-json` reads it (--dry-run-format aurora).
//
// Package auroratest is a fake Aurora scheduler, with an agent that runs
// the tasks as local processes, for tests.
package aurora
