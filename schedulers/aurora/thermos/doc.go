// Package thermos holds the Aurora job config in the JSON form that the
// Aurora client puts into a task's ExecutorConfig.data for the Thermos
// executor (AuroraExecutor), and that `aurora job create --read-json`
// reads: the fields of Aurora's MesosJob, Task, Process, Resources and
// Constraint schema that Egret sets. Thermos fills every field left out
// with its schema default.
//
// Values may contain the mustache references Thermos binds per instance
// when it starts a task: {{mesos.instance}}, {{mesos.hostname}},
// {{thermos.task_id}} and {{thermos.ports[<name>]}} (a port Aurora
// assigned to the task for each named port it requested).
package thermos
