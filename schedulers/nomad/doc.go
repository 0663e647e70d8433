// Package nomad is Egret's scheduler for HashiCorp Nomad, registered as
// "nomad" and also served as the plugin binary egret-scheduler-nomad.
//
// It works in library mode: every call (submit, kill, restart, update)
// talks to the Nomad HTTP API through github.com/hashicorp/nomad/api and
// keeps no state; later calls find the topology's job again by its name
// and meta.
//
// # The job
//
// A topology is one Nomad service job. Its ID is the topology id (which
// starts with the topology name), its name the topology name, and its meta
// carries egret_topology, egret_topology_id, egret_cluster, egret_role,
// egret_environ and the package's URI and SHA-256. Each container is one
// task group, container-<i> (container-0 runs the topology manager), with
// count 1, the restart and reschedule policies of egret.nomad.restart.* and
// egret.nomad.reschedule.*, an ephemeral disk, and a group network with a
// dynamic port per daemon port (tmanager and tmanager_http in container 0,
// stmgr in the others, metrics everywhere when the prometheus sink is on).
//
// The group's one task, executor, runs `egret executor` with the raw_exec,
// exec or docker driver. Nomad fetches the topology package (an artifact
// with the package's checksum, unpacked into local/egret/package), which
// carries the submitting egret binary (egret.package.core.bundle), or,
// when egret.package.core.uri is set, the egret binary from there (a URI
// of a scheme Nomad's getter knows: Nomad 1.6 has no file://); a template writes
// the cluster config to local/cluster.json, which the executor reads with
// --config-file; the stream manager's port is passed as --stmgr-port
// ${NOMAD_PORT_stmgr}. The task's environment carries
// EGRET_CONTAINER_INDEX, EGRET_HOST (${NOMAD_IP_<first port>}, the address
// the daemons advertise), EGRET_BIND_HOST (the same address, which they
// listen on, in host network mode) and EGRET_PORT_<LABEL> =
// ${NOMAD_PORT_<label>} for every port. The metrics service, with the
// prometheus sink on, uses Nomad's service registry by default and its
// check never decides an allocation's health. CPU is the packing plan's cores
// times egret.nomad.mhz.per.core; memory and disk are rounded up to MiB.
//
// # Operations
//
// Schedule registers the job only if it is new and waits (at most
// egret.nomad.placement.timeout) for Nomad's evaluation: a task group
// Nomad cannot place fails the submission with the evaluation's metrics
// (which resource was short on how many nodes), and the job is removed.
// Kill deregisters and purges the job. Restart restarts the executor task
// of one container's allocation, or of all, in place (leaving one that is
// starting). Update, and AddContainers/RemoveContainers (spi.Scalable),
// re-register the job with the changed task groups only: the group of a
// container whose resources did not change (group meta egret_resources)
// is sent back exactly as it runs, so Nomad leaves it alone whatever the
// caller's config; the job-level update block Nomad returns is not sent
// back (Nomad would merge its zeros into the new groups and reject them).
// Update then waits for Nomad's deployment (egret.nomad.deployment.timeout).
// Diagnose (spi.Diagnoser) names the containers that do not run, with
// their task events. Nomad's errors are reduced to one line. JobLinks
// gives the job's page in the Nomad UI. JobJSON renders the job for
// inspection with `nomad job validate -json` or `nomad job plan -json`
// (the CLI's --dry-run-format nomad-json); registered by hand it would
// find no topology state.
//
// The package nomadtest is a fake of the Nomad HTTP API for tests.
package nomad
