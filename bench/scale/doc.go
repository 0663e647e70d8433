// Package scale measures how Egret's control plane grows with the number
// of containers of one topology (issue 42; docs/benchmarks.md §Scale,
// docs/operations.md §Scale).
//
// Run starts one real topology manager (daemons/tmanager, in a child
// process of its own so that its CPU and memory can be read from /proc)
// on a localfs state manager, submits a topology of N containers, and
// drives N stand-in stream managers from this process. A stand-in speaks
// the exact wire protocol of a stream manager toward the topology manager
// (daemons/wire frames: StMgrRegisterRequest, NewPhysicalPlan, heartbeats,
// and under effectively-once StartCheckpoint → one InstanceStateStored per
// task, RestoreTopologyState → RestoreTopologyStateResponse,
// CheckpointComplete), and a second connection per container publishes
// MetricsPublish reports as a container's metrics manager forwards them
// (one for the stream manager, one per instance). Stand-ins have no data
// plane: they hold no peer connections and no instances.
//
// The data-plane mesh is measured with real stream managers
// (daemons/stmgr) at small N by Mesh.
//
// Run measures: the time from the last registration to every container
// holding the physical plan; the topology manager's CPU, memory and open
// sockets at steady state; the time to evict a container that goes silent
// (its process stopped, its TCP connection open) and the time until its
// replacement is in a plan every container holds; checkpoint completion
// (StartCheckpoint to CheckpointComplete at every container); and the
// response times of the topology manager's HTTP API (what `egret metrics`
// and the tracker read).
//
// A test binary or command that calls Run must call ChildMain first thing
// in main (or TestMain): the topology manager child is the same binary
// started again with an environment variable.
package scale
