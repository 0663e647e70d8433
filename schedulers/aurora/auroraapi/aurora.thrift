// The subset of the Apache Aurora scheduler API (api.thrift of Aurora
// 0.22, the last release) that Egret's Aurora scheduler and its fake use.
// Written for Egret: field ids, types and names follow Aurora's published
// API so that the wire format (TJSONProtocol over HTTP POST /api) is the
// real one; structs, fields and calls Egret does not use are left out
// (Thrift skips unknown fields, so a real scheduler's extra fields are
// harmless). Regenerate the Go code with `make thrift`.

namespace go auroraapi

enum ResponseCode {
  INVALID_REQUEST    = 0,
  OK                 = 1,
  ERROR              = 2,
  WARNING            = 3,
  AUTH_FAILED        = 4,
  JOB_UPDATING_ERROR = 5,
  ERROR_TRANSIENT    = 6
}

const string AURORA_EXECUTOR_NAME = 'AuroraExecutor'

struct Identity {
  2: string user
}

struct JobKey {
  1: string role
  2: string environment
  3: string name
}

struct InstanceKey {
  1: JobKey jobKey
  2: i32 instanceId
}

struct ExecutorConfig {
  1: string name
  2: string data
}

struct Metadata {
  1: string key
  2: string value
}

union Resource {
  1: double numCpus
  2: i64 ramMb
  3: i64 diskMb
  4: string namedPort
  5: i64 numGpus
}

struct MesosContainer {
}

union Container {
  1: MesosContainer mesos
}

struct TaskConfig {
  28: JobKey job
  17: Identity owner
   7: bool isService
  11: i32 priority
  13: i32 maxTaskFailures
  18: optional bool production
  30: optional string tier
  32: set<Resource> resources
  23: optional string contactEmail
  25: optional ExecutorConfig executorConfig
  27: optional set<Metadata> metadata
  29: Container container = { "mesos": {} }
}

struct JobConfiguration {
  9: JobKey key
  7: Identity owner
  6: TaskConfig taskConfig
  8: i32 instanceCount
}

enum ScheduleStatus {
  INIT        = 11,
  THROTTLED   = 16,
  PENDING     = 0,
  ASSIGNED    = 9,
  STARTING    = 1,
  RUNNING     = 2,
  FINISHED    = 3,
  PREEMPTING  = 13,
  RESTARTING  = 12,
  DRAINING    = 17,
  FAILED      = 4,
  KILLED      = 5,
  KILLING     = 6,
  LOST        = 7,
  PARTITIONED = 18
}

struct TaskEvent {
  1: i64 timestamp
  2: ScheduleStatus status
  3: optional string message
  4: optional string scheduler
}

struct AssignedTask {
  1: string taskId
  2: string slaveId
  3: string slaveHost
  4: TaskConfig task
  5: map<string, i32> assignedPorts
  6: i32 instanceId
}

struct ScheduledTask {
  1: AssignedTask assignedTask
  2: ScheduleStatus status
  3: i32 failureCount
  4: list<TaskEvent> taskEvents
  5: string ancestorId
}

struct ScheduleStatusResult {
  1: list<ScheduledTask> tasks
}

struct TaskQuery {
  14: string role
   9: string environment
   2: string jobName
   4: set<string> taskIds
   5: set<ScheduleStatus> statuses
   7: set<i32> instanceIds
  11: set<JobKey> jobKeys
}

struct PendingReason {
  1: string taskId
  2: string reason
}

struct GetPendingReasonResult {
  1: set<PendingReason> reasons
}

struct ServerInfo {
  1: string clusterName
  3: string statsUrlPrefix
}

union Result {
   3: ScheduleStatusResult scheduleStatusResult
  21: GetPendingReasonResult getPendingReasonResult
}

struct ResponseDetail {
  1: string message
}

struct Response {
  1: ResponseCode responseCode
  5: ServerInfo serverInfo
  3: optional Result result
  6: list<ResponseDetail> details
}

service ReadOnlyScheduler {
  Response getTasksWithoutConfigs(1: TaskQuery query)
  Response getPendingReason(1: TaskQuery query)
}

service AuroraSchedulerManager extends ReadOnlyScheduler {
  Response createJob(1: JobConfiguration description)
  Response restartShards(5: JobKey job, 3: set<i32> shardIds)
  Response killTasks(4: JobKey job, 5: set<i32> instances, 6: string message)
  Response addInstances(3: InstanceKey key, 4: i32 count)
}
