// Package example is the scheduler behind the egret-scheduler-example
// plugin. It stands in for a resource manager with a JSON file: scheduling
// a topology records an allocation (a fresh id) for containers 0..N,
// restarting a container gives it a new allocation id, and killing the
// topology removes its entry. It implements spi.Scheduler and spi.Scalable
// and keeps no state in memory, so every call (and every CLI command)
// finds the topology in the file again, as a library-mode scheduler must.
//
// Config keys:
//
//	egret.scheduler.example.state.file   the JSON file (required)
package example
