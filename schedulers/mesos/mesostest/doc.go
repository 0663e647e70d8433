// Package mesostest is a fake Mesos master with one agent, for tests of
// the Mesos framework. It serves the v1 scheduler HTTP API the way the
// Mesos documentation (docs/scheduler-http-api.md) and the master describe
// it, and runs the launched tasks as real local processes.
//
// # The API
//
// POST /api/v1/scheduler accepts calls encoded as protobuf
// (Content-Type: application/x-protobuf) or JSON (application/json); any
// other content type gets 415, an Accept header allowing neither gets 406,
// a body that does not decode or a call that is not valid gets 400.
// SUBSCRIBE is answered with 200 and a RecordIO stream of events in the
// accepted encoding, with the stream's id in the Mesos-Stream-Id header:
// SUBSCRIBED first, then HEARTBEAT every Options.HeartbeatInterval, OFFERS,
// RESCIND, UPDATE, FAILURE and ERROR. A subscription the master refuses (a
// role not in Options.Roles, a framework that has been removed, a second
// subscription without force) gets a single ERROR event and the stream is
// closed. GET /master/frameworks lists the frameworks the master knows
// (FrameworksJSON: the fields of Mesos' model a scheduler uses to find its
// own). Every other call is answered 202 Accepted, or:
//
//	400 Bad Request   no framework_id, "Framework cannot be found", a missing
//	                  Mesos-Stream-Id header, or a stream id that is not the
//	                  framework's current subscription's
//	401 Unauthorized  Options.Principal is set and the request has no or
//	                  wrong HTTP basic credentials
//	403 Forbidden     "Framework has been removed" (torn down, or its
//	                  failover timeout passed) or "Framework is not
//	                  subscribed" (its subscription stream is closed)
//
// A framework whose subscription stream breaks is disconnected; unless it
// subscribes again (with its framework id) within its failover_timeout, the
// master removes it and kills its tasks. TEARDOWN removes it at once.
//
// # The agent
//
// The one agent offers Options.CPUs, MemMiB, DiskMiB and the Ports ranges,
// as unreserved ("*") resources, to one subscribed framework at a time
// (round robin every Options.AllocationInterval). DECLINE and the unused
// part of an ACCEPT install a filter (refuse_seconds, default 5s) that
// keeps the same resources from being offered again to that framework;
// REVIVE clears the filters, SUPPRESS stops offers until REVIVE.
//
// ACCEPT with LAUNCH operations validates each task (known offers of the
// framework, resources within the offers, an id unused by a live task, a
// command) and answers an invalid one with TASK_LOST (invalid offers) or
// TASK_ERROR, as the master does. A valid task runs as the command
// executor would run it: the sandbox is
// <WorkDir>/slaves/<agent>/frameworks/<framework>/executors/<task>/runs/<container>,
// the CommandInfo URIs are fetched into it (file://, absolute paths,
// http(s)://; output_file names the file; executable sets the mode 0755;
// extract, on by default as in Mesos, unpacks .tar.gz and .tgz archives
// into the sandbox), then TASK_STARTING is sent, the command is started
// (`sh -c value` when shell is true, else value with arguments) in the
// sandbox with the agent's environment plus MESOS_SANDBOX,
// MESOS_DIRECTORY, MESOS_FRAMEWORK_ID, MESOS_EXECUTOR_ID, MESOS_TASK_ID,
// MESOS_AGENT_ID and the command's environment, with stdout and stderr in
// the sandbox, and TASK_RUNNING follows. Its exit gives TASK_FINISHED
// (status 0), TASK_FAILED (any other status or a signal) or TASK_KILLED (a
// KILL or TEARDOWN: SIGTERM to its process group, SIGKILL after the kill
// policy's grace period or Options.KillGrace). A fetch that fails gives
// TASK_FAILED with REASON_CONTAINER_LAUNCH_FAILED.
//
// Status updates carry a uuid and are delivered reliably: one at a time
// per task, resent every Options.UpdateRetryInterval and on every new
// subscription until ACKNOWLEDGE names their uuid. RECONCILE answers with
// the latest state of each named task (TASK_LOST for one the master does
// not know) or, with no task named, of every live task of the framework,
// without a uuid. KILL of an unknown task answers TASK_LOST.
//
// # Faults
//
// DropSubscription closes a framework's stream, LoseNextSubscribed breaks
// the next new framework's connection after it was registered and before
// SUBSCRIBED left (the framework stays, disconnected), KillTask kills a task's
// process (SIGKILL), Rescind rescinds the outstanding offers, Failover
// simulates a new leading master (every stream closed, the registrations
// forgotten, the tasks kept: frameworks subscribe again with their ids and
// reconcile), and Options sets resources too small for a task. Tasks,
// Frameworks and Calls observe the master's own state.
//
// What is not modelled: more than one agent, reservations, persistent
// volumes, task groups, custom executors, health checks, partition
// awareness (TASK_UNREACHABLE), the v1 operator API and master redirection.
// Wherever the real master's behaviour was not known for certain, the fake
// follows the documentation and says so in docs/schedulers/mesos.md.
package mesostest
