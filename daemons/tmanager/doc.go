// Package tmanager is the topology manager daemon (`egret tmanager`), run
// in container 0 of every topology. It never touches data tuples; it
//
//   - holds the topology's EPHEMERAL location node /tmanagers/<name>
//     (host, server_port, http_port, pid), so at most one topology manager
//     serves a topology: while another session holds the node it retries
//     (every second and whenever the node is deleted) up to
//     egret.tmanager.establish.timeout, then Run fails with ErrLocationHeld;
//     if its own node later disappears or changes hands, Run fails with
//     ErrLocationLost and the executor restarts it;
//   - reads the topology, packing plan and execution state, and watches the
//     packing plan;
//   - accepts StMgrRegisterRequest frames from the stream managers of
//     containers 1..N on its server port. Once every container of the
//     packing plan has a registered stream manager it builds a
//     PhysicalPlan (topology with the plan's parallelism, packing plan,
//     stream manager locations, state RUNNING or PAUSED, runtime config,
//     version+1), writes it to /pplans/<name> and broadcasts it as
//     NewPhysicalPlan on every stream manager connection. A stream manager
//     that registers again (restart, new port) replaces its old connection
//     and causes a new version; so does a packing plan change once the
//     stream managers of the new plan's containers have registered
//     (stream managers of removed containers are dropped);
//   - evicts a stream manager silent for egret.tmanager.heartbeat.timeout
//     even when its TCP connection stays open (Heron only noticed closed
//     connections);
//   - aggregates MetricsPublish frames from the metrics managers (latest
//     value per process and metric, bounded) and serves an HTTP API:
//     POST /activate, /deactivate, /runtime-config and GET /pplan, /stats,
//     /exceptions, /healthz.
//
// Versions continue across restarts: a new topology manager reads the
// previous /pplans/<name> of the same submission and keeps its version
// sequence, state and runtime config.
//
// Every connection is read by its own goroutine and written by another
// from a bounded queue, so a slow peer never blocks a broadcast: a peer
// whose queue fills is disconnected and gets the current plan when it
// registers again. A garbage, oversize, unknown or undecodable frame is
// logged with the peer's address and closes that connection only.
//
// docs/protocol.md ("Topology manager") describes the protocol and the HTTP
// API with examples.
package tmanager
