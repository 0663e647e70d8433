// Package mesos is Egret's scheduler for Apache Mesos, registered as
// "mesos" and also served as the plugin binary egret-scheduler-mesos.
//
// It works in service mode: each topology is one Mesos framework, run by a
// framework service (Serve) that the CLI side (Scheduler) starts detached
// on the submitting machine as `<binary> mesos-framework --work-dir W`.
// The service subscribes to the master's v1 scheduler HTTP API through
// github.com/mesos/mesos-go (api/v1/lib: httpcli, httpsched, calls),
// launches one command-executor task per container from the offers that
// fit (cpus, mem, disk and ports), declines the rest with a refuse
// filter, acknowledges status updates, relaunches containers whose tasks
// end unasked with backoff, reconciles after every subscription, and
// fails over to its tasks with the framework id saved in W when it is
// restarted. Its control endpoint on 127.0.0.1 serves the CLI's kill
// (kill every task, then TEARDOWN), restart and update.
//
// The task's command runs `egret executor` in the sandbox after the Mesos
// fetcher fetched the topology package and, from egret.package.core.uri,
// the egret binary; ports come from the offer and reach the daemons as
// EGRET_PORT_<LABEL>.
//
// docs/schedulers/mesos.md describes the calls made and the setup; the
// package mesostest is the fake master the tests run against.
package mesos
