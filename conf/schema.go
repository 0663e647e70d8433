package conf

import (
	"fmt"
	"slices"
	"strings"
)

// Type is the type of a configuration value.
type Type int

// The value types of the schema. Values are always stored as strings; the
// type says how they are checked and canonicalized.
const (
	TypeString   Type = iota // any text
	TypeInt                  // decimal integer
	TypeFloat                // decimal number
	TypeBool                 // true or false (canonical form)
	TypeDuration             // Go duration: 500ms, 30s, 2m
	TypeBytes                // byte count, or a size such as 64KiB, 100MiB, 1GB
	TypeEnum                 // one of Key.Enum
	TypeList                 // YAML sequence or comma-separated string; stored comma-separated
)

func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeInt:
		return "int"
	case TypeFloat:
		return "float"
	case TypeBool:
		return "bool"
	case TypeDuration:
		return "duration"
	case TypeBytes:
		return "bytes"
	case TypeEnum:
		return "enum"
	case TypeList:
		return "list"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Key describes one configuration key of the schema.
type Key struct {
	Name string
	Type Type
	// Default is the value used when no file sets the key; it may contain
	// ${VAR} references. Keys of a backend get their default only when that
	// backend is selected.
	Default string
	// Required keys must have a non-empty value (for a backend key: when the
	// backend is selected).
	Required bool
	// Enum lists the allowed values of a TypeEnum key.
	Enum []string
	// File is the file the key belongs in, without .yaml ("statemgr").
	File string
	// Backend is "" for a core key, or "<kind>/<name>" for a key read only
	// by one built-in backend: kind is scheduler, statemgr, uploader,
	// packing, metricssink or checkpointstorage ("scheduler/nomad",
	// "metricssink/prometheus", "checkpointstorage/localfs").
	Backend     string
	Description string

	// check validates the canonical value beyond its type.
	check func(string) error
}

// Files are the config file names of a cluster, in load order.
var Files = []string{"client", "scheduler", "packing", "statemgr", "uploader", "internals", "metrics_sinks"}

// pluginNamespace is a key prefix under which the next segment names a
// backend: egret.statemgr.<name>.*, egret.<scheduler>.*, ...
type pluginNamespace struct {
	prefix   string   // "egret.statemgr"
	kind     string   // the Backend kind its names select: "statemgr"
	builtins []string // names built into egret
}

// The built-in backends, by kind: exactly the names the egret binary
// registers with core/spi (a test of package cli checks that they agree).
// Any other name of a backend kind is an external plugin binary
// egret-<kind>-<name>.
var (
	builtinSchedulers = []string{"aurora", "kubernetes", "local", "mesos", "nomad", "slurm", "yarn"}
	builtinStateMgrs  = []string{"localfs", "zookeeper"}
	builtinUploaders  = []string{"hdfs", "http", "localfs"}
	builtinPackings   = []string{"ffd", "rcrr", "roundrobin"}
	builtinSinks      = []string{"file", "graphite", "prometheus", "tmanager"}
	builtinCkpts      = []string{"hdfs", "localfs"}
	pluginNamespaces  = []pluginNamespace{
		{"egret.scheduler", KindScheduler, builtinSchedulers},
		{"egret.statemgr", KindStateManager, builtinStateMgrs},
		{"egret.uploader", KindUploader, builtinUploaders},
		{"egret.packing", KindPacking, builtinPackings},
		{"egret.metrics", KindMetricsSink, builtinSinks},
		{"egret.checkpoint", KindCheckpointStorage, builtinCkpts},
		{"egret", KindScheduler, builtinSchedulers},
	}
)

// The backend kinds a cluster config selects by name, as plugin binaries
// name them (egret-<kind>-<name>).
const (
	KindScheduler    = "scheduler"
	KindStateManager = "statemgr"
	KindUploader     = "uploader"
	KindPacking      = "packing"
	KindMetricsSink  = "metricssink"
	// KindCheckpointStorage is the kind of the effectively-once
	// checkpoint storages.
	KindCheckpointStorage = "checkpointstorage"
)

// backendKeys maps each backend kind to the key that selects it.
var backendKeys = []struct{ kind, key string }{
	{KindScheduler, "egret.scheduler"},
	{KindStateManager, "egret.statemgr"},
	{KindUploader, "egret.uploader"},
	{KindPacking, "egret.packing"},
	{KindCheckpointStorage, "egret.checkpoint.storage"},
}

// Builtins returns the names of the built-in backends of kind (scheduler,
// statemgr, uploader, packing, metricssink or checkpointstorage), sorted.
func Builtins(kind string) []string {
	for _, ns := range pluginNamespaces {
		if ns.kind == kind {
			return slices.Clone(ns.builtins)
		}
	}
	return nil
}

// schema is the one table of Egret's operator config keys. A backend that
// needs a new key adds it here (and REFERENCE.md is regenerated).
var schema = []Key{
	// client.yaml
	{Name: "egret.config.role.required", Type: TypeBool, Default: "false", File: "client",
		Description: "The role must be given (cluster/role[/env]); otherwise it defaults to $USER."},
	{Name: "egret.config.env.required", Type: TypeBool, Default: "false", File: "client",
		Description: "The environment must be given (cluster/role/env); otherwise it defaults to \"default\"."},
	{Name: "egret.kill.drain.timeout", Type: TypeDuration, Default: "30s", File: "client",
		Description: "How long egret kill drains a running topology before it stops it: the spouts are deactivated and kill waits until no tuple is in flight (no pending roots, empty queues, counts no longer moving; seen through the metrics, so it takes at least two egret.metrics.export.interval). 0s: stop at once, like --now."},
	{Name: "egret.deactivate.drain.timeout", Type: TypeDuration, Default: "30s", File: "client",
		Description: "How long egret deactivate waits, after deactivating the spouts, until no tuple is in flight, as egret kill's drain does (egret.kill.drain.timeout): when it returns, every root was acked or failed. 0s: return at once, like --now."},
	{Name: "egret.update.drain.timeout", Type: TypeDuration, Default: "30s", File: "client",
		Description: "How long egret update (and apply) drains a running topology it rescales, between the deactivation of its spouts and the restart of its instances (with --restart: before each container restarts), as egret kill does (egret.kill.drain.timeout). 0s: no drain."},
	{Name: "egret.upgrade.drain.timeout", Type: TypeDuration, Default: "30s", File: "client",
		Description: "How long egret upgrade (and its rollback) drains a running topology before each container restarts, between the deactivation of its spouts and the restart, as egret kill does (egret.kill.drain.timeout); the spouts are activated again once the container is healthy. 0s: no drain, the containers restart while tuples flow."},
	{Name: "egret.plugin.directory", Type: TypeString, Default: "${EGRET_HOME}/plugins", File: "client",
		Description: "Directory searched for external plugin binaries (egret-scheduler-<name>, ...)."},
	{Name: "egret.package.goos", Type: TypeString, Default: "", File: "client", check: checkGOOS,
		Description: "GOOS the topology binary is built for when a Go package is submitted; empty: the machine running the CLI."},
	{Name: "egret.package.goarch", Type: TypeString, Default: "", File: "client", check: checkGOARCH,
		Description: "GOARCH the topology binary is built for; empty: the machine running the CLI."},
	{Name: "egret.package.core.uri", Type: TypeString, Default: "", File: "client",
		Description: "URI the containers download the egret binary (or a .tar.gz/.zip holding it) from; empty: the egret in the topology package (egret.package.core.bundle), else the scheduler's own (local: the egret running the command; nomad's docker driver and kubernetes: the image's)."},
	{Name: "egret.package.core.bundle", Type: TypeBool, Default: "false", File: "client",
		Description: "Put the submitting egret binary into the topology package (as egret) when egret.package.core.uri is empty, for containers with no egret of their own (nomad, kubernetes); that egret must be built for egret.package.goos/goarch."},

	// scheduler.yaml
	{Name: "egret.scheduler", Type: TypeString, Required: true, File: "scheduler", check: checkName,
		Description: "Scheduler backend: a built-in name (" + strings.Join(builtinSchedulers, ", ") + ") or an external plugin egret-scheduler-<name>."},
	{Name: "egret.scheduler.local.egret.binary", Type: TypeString, File: "scheduler",
		Description: "The egret binary the local scheduler service and executors run; empty: the egret running the command."},
	{Name: "egret.scheduler.local.working.directory", Type: TypeString, Default: "${EGRET_HOME}/topologies/${CLUSTER}/${ROLE}/${TOPOLOGY}", File: "scheduler",
		Description: "Working directory of a topology on the machine running the scheduler (containers of the local scheduler live below it; kill removes it). It must name the topology (${TOPOLOGY}) and have no `..` element."},

	{Name: "egret.nomad.address", Type: TypeString, Default: "http://127.0.0.1:4646", File: "scheduler", Backend: "scheduler/nomad", check: checkHTTPURL,
		Description: "Nomad HTTP API address."},
	{Name: "egret.nomad.token", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Nomad ACL token; ${NOMAD_TOKEN:-} reads it from the environment."},
	{Name: "egret.nomad.namespace", Type: TypeString, Default: "default", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Nomad namespace of the topology's jobs."},
	{Name: "egret.nomad.region", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Nomad region; empty: the agent's region."},
	{Name: "egret.nomad.datacenters", Type: TypeList, Default: "dc1", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Datacenters the jobs may run in."},
	{Name: "egret.nomad.driver", Type: TypeEnum, Enum: []string{"raw_exec", "exec", "docker"}, Default: "raw_exec", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Nomad task driver of the containers."},
	{Name: "egret.nomad.docker.image", Type: TypeString, Default: "egret/egret:latest", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Image holding the egret binary, for the docker driver."},
	{Name: "egret.nomad.network.mode", Type: TypeEnum, Enum: []string{"host", "bridge"}, Default: "host", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Network mode of the task group."},
	{Name: "egret.nomad.mhz.per.core", Type: TypeInt, Default: "2000", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "MHz requested from Nomad per CPU core of the packing plan."},
	{Name: "egret.nomad.metrics.service.register", Type: TypeBool, Default: "true", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Register each container's Prometheus port as a Nomad service (when the prometheus sink is enabled)."},
	{Name: "egret.nomad.metrics.service.check.interval", Type: TypeDuration, Default: "10s", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "Interval of the metrics service's TCP check (shown in the service catalog; it never decides an allocation's health)."},
	{Name: "egret.nomad.metrics.service.check.timeout", Type: TypeDuration, Default: "2s", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "Timeout of the metrics service's TCP check."},
	{Name: "egret.nomad.metrics.service.tags", Type: TypeList, Default: "prometheus,metrics,egret", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Extra tags of the metrics service."},
	{Name: "egret.nomad.metrics.service.provider", Type: TypeEnum, Enum: []string{"consul", "nomad"}, Default: "nomad", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Service registry of the metrics service: nomad (Nomad's built-in service discovery, Nomad 1.3+) or consul (needs a Consul agent on every client, else nothing is placed)."},
	{Name: "egret.nomad.ui.address", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Base URL of the Nomad web UI in job links; empty: egret.nomad.address."},
	{Name: "egret.nomad.tls.ca.cert", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/nomad",
		Description: "PEM file of the CA that signs the Nomad servers' certificates; empty: $NOMAD_CACERT."},
	{Name: "egret.nomad.tls.client.cert", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/nomad",
		Description: "PEM client certificate for Nomad's mutual TLS; empty: $NOMAD_CLIENT_CERT."},
	{Name: "egret.nomad.tls.client.key", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/nomad",
		Description: "PEM key of the client certificate; empty: $NOMAD_CLIENT_KEY."},
	{Name: "egret.nomad.tls.server.name", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Server name (SNI) checked in the Nomad servers' certificates; empty: $NOMAD_TLS_SERVER_NAME or the address's host."},
	{Name: "egret.nomad.tls.skip.verify", Type: TypeBool, Default: "false", File: "scheduler", Backend: "scheduler/nomad",
		Description: "Do not verify the Nomad servers' certificates (testing only); $NOMAD_SKIP_VERIFY=true also turns verification off."},
	{Name: "egret.nomad.placement.timeout", Type: TypeDuration, Default: "30s", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "How long submit and update wait for Nomad to evaluate the job and report containers it cannot place."},
	{Name: "egret.nomad.deployment.timeout", Type: TypeDuration, Default: "5m", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "Longest wait of an update for Nomad's deployment (replaced and new containers running and healthy); Nomad goes on with it after that."},
	{Name: "egret.nomad.tmanager.cpu", Type: TypeFloat, Default: "1.0", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "CPU cores of container 0 (topology manager and metrics manager), which the packing plan does not size."},
	{Name: "egret.nomad.tmanager.ram", Type: TypeBytes, Default: "1GiB", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "Memory of container 0."},
	{Name: "egret.nomad.tmanager.disk", Type: TypeBytes, Default: "1GiB", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "Ephemeral disk of container 0."},
	{Name: "egret.nomad.restart.attempts", Type: TypeInt, Default: "3", File: "scheduler", Backend: "scheduler/nomad", check: checkNonNegative,
		Description: "Restarts of a container's executor task on its node within egret.nomad.restart.interval (Nomad restart block)."},
	{Name: "egret.nomad.restart.interval", Type: TypeDuration, Default: "5m", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "Window of egret.nomad.restart.attempts."},
	{Name: "egret.nomad.restart.delay", Type: TypeDuration, Default: "15s", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "Pause before Nomad restarts a dead executor task."},
	{Name: "egret.nomad.restart.mode", Type: TypeEnum, Enum: []string{"fail", "delay"}, Default: "fail", File: "scheduler", Backend: "scheduler/nomad",
		Description: "When the attempts are used up: fail (the allocation fails and is rescheduled, possibly on another node) or delay (wait out the interval and keep restarting in place)."},
	{Name: "egret.nomad.reschedule.attempts", Type: TypeInt, Default: "0", File: "scheduler", Backend: "scheduler/nomad", check: checkNonNegative,
		Description: "Reschedules of a failed container within egret.nomad.reschedule.interval; 0: unlimited (Nomad reschedule block)."},
	{Name: "egret.nomad.reschedule.interval", Type: TypeDuration, Default: "1h", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "Window of egret.nomad.reschedule.attempts (unused when unlimited)."},
	{Name: "egret.nomad.reschedule.delay", Type: TypeDuration, Default: "30s", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "Delay before the first reschedule of a failed container."},
	{Name: "egret.nomad.reschedule.delay.function", Type: TypeEnum, Enum: []string{"exponential", "fibonacci", "constant"}, Default: "exponential", File: "scheduler", Backend: "scheduler/nomad",
		Description: "How the reschedule delay grows between attempts."},
	{Name: "egret.nomad.reschedule.max.delay", Type: TypeDuration, Default: "1h", File: "scheduler", Backend: "scheduler/nomad", check: checkPositive,
		Description: "Upper bound of the reschedule delay."},

	{Name: "egret.aurora.scheduler.uri", Type: TypeString, Default: "http://127.0.0.1:8081", File: "scheduler", Backend: "scheduler/aurora", check: checkHTTPURL,
		Description: "Address of the Aurora scheduler; its Thrift API is served at <address>/api and job pages at <address>/scheduler/<role>/<env>/<topology>."},
	{Name: "egret.aurora.cluster", Type: TypeString, Default: "devcluster", File: "scheduler", Backend: "scheduler/aurora",
		Description: "Aurora cluster name (<cluster>/<role>/<env>/<topology>); must be the name the scheduler reports, and goes into the Thermos job."},
	{Name: "egret.aurora.role", Type: TypeString, Default: "${ROLE}", File: "scheduler", Backend: "scheduler/aurora",
		Description: "Role of the topology's Aurora job (a Unix account on the agents); the role of `egret <command> aurora/<role>/<env>` wins when given."},
	{Name: "egret.aurora.environ", Type: TypeString, Default: "${ENVIRON}", File: "scheduler", Backend: "scheduler/aurora",
		Description: "Environment of the topology's Aurora job (the scheduler accepts prod, devel, test, staging<N> by default); the env of `egret <command> aurora/<role>/<env>` wins when given."},
	{Name: "egret.aurora.username", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/aurora",
		Description: "User for HTTP basic authentication to the Aurora scheduler; empty: none."},
	{Name: "egret.aurora.password", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/aurora",
		Description: "Password for HTTP basic authentication; ${EGRET_AURORA_PASSWORD:-} reads it from the environment."},
	{Name: "egret.aurora.wait.timeout", Type: TypeDuration, Default: "5m", File: "scheduler", Backend: "scheduler/aurora", check: checkPositive,
		Description: "Longest wait for every instance to reach RUNNING on submit (the job is killed when one fails or does not run in time) and for killed instances to end."},
	{Name: "egret.aurora.kill.max.attempts", Type: TypeInt, Default: "5", File: "scheduler", Backend: "scheduler/aurora", check: checkPositive,
		Description: "Attempts to kill the Aurora job when the scheduler is unreachable or answers a transient error (a failover)."},
	{Name: "egret.aurora.kill.retry.interval", Type: TypeDuration, Default: "2s", File: "scheduler", Backend: "scheduler/aurora", check: checkPositive,
		Description: "Pause between kill attempts."},
	{Name: "egret.mesos.master.uri", Type: TypeString, Default: "http://127.0.0.1:5050", File: "scheduler", Backend: "scheduler/mesos", check: checkHTTPURL,
		Description: "Mesos master address; the framework calls its v1 scheduler API at <uri>/api/v1/scheduler."},
	{Name: "egret.mesos.role", Type: TypeString, Default: "*", File: "scheduler", Backend: "scheduler/mesos",
		Description: "Mesos role the framework subscribes with; offers of resources reserved for it, or unreserved (*), are used."},
	{Name: "egret.mesos.principal", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/mesos",
		Description: "Mesos principal of the framework (FrameworkInfo.principal, and the HTTP basic authentication user); empty: none."},
	{Name: "egret.mesos.secret", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/mesos",
		Description: "Secret of the principal for HTTP basic authentication; ${MESOS_SECRET:-} reads it from the environment. Empty: no authentication."},
	{Name: "egret.mesos.user", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/mesos",
		Description: "User the tasks run as on the agents (FrameworkInfo.user); empty: the user running the framework."},
	{Name: "egret.mesos.failover.timeout", Type: TypeDuration, Default: "168h", File: "scheduler", Backend: "scheduler/mesos", check: checkPositive,
		Description: "How long the master keeps the tasks of a disconnected framework for it to fail over (FrameworkInfo.failover_timeout)."},
	{Name: "egret.mesos.checkpoint", Type: TypeBool, Default: "true", File: "scheduler", Backend: "scheduler/mesos",
		Description: "Agents checkpoint the tasks, so they survive an agent restart (FrameworkInfo.checkpoint)."},
	{Name: "egret.mesos.subscribe.timeout", Type: TypeDuration, Default: "30s", File: "scheduler", Backend: "scheduler/mesos", check: checkPositive,
		Description: "How long a new framework tries to subscribe before the submission fails (an unreachable master)."},
	{Name: "egret.mesos.offer.refuse", Type: TypeDuration, Default: "5s", File: "scheduler", Backend: "scheduler/mesos", check: checkPositive,
		Description: "Refuse filter of declined offers and of the unused part of accepted ones (refuse_seconds)."},
	{Name: "egret.mesos.offer.timeout", Type: TypeDuration, Default: "2m", File: "scheduler", Backend: "scheduler/mesos", check: checkPositive,
		Description: "How long a container waits for an offer big enough before the framework reports which resource is short and by how much (submit and update fail)."},
	{Name: "egret.mesos.launch.timeout", Type: TypeDuration, Default: "5m", File: "scheduler", Backend: "scheduler/mesos", check: checkPositive,
		Description: "How long submit and update wait for every container's task to run."},
	{Name: "egret.mesos.relaunch.backoff.initial", Type: TypeDuration, Default: "1s", File: "scheduler", Backend: "scheduler/mesos", check: checkPositive,
		Description: "Delay before relaunching a container whose task ended unasked (failed, lost); it doubles per failure in a row."},
	{Name: "egret.mesos.relaunch.backoff.max", Type: TypeDuration, Default: "1m", File: "scheduler", Backend: "scheduler/mesos", check: checkPositive,
		Description: "Upper bound of the relaunch delay."},
	{Name: "egret.mesos.tmanager.cpu", Type: TypeFloat, Default: "1.0", File: "scheduler", Backend: "scheduler/mesos", check: checkPositive,
		Description: "CPU cores of container 0 (topology manager and metrics manager), which the packing plan does not size."},
	{Name: "egret.mesos.tmanager.ram", Type: TypeBytes, Default: "1GiB", File: "scheduler", Backend: "scheduler/mesos", check: checkPositive,
		Description: "Memory of container 0."},
	{Name: "egret.mesos.tmanager.disk", Type: TypeBytes, Default: "1GiB", File: "scheduler", Backend: "scheduler/mesos", check: checkPositive,
		Description: "Disk of container 0."},
	{Name: "egret.mesos.framework.binary", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/mesos",
		Description: "Binary that runs the topology's framework service (`<binary> mesos-framework --work-dir W`): egret or egret-scheduler-mesos; empty: the running one."},
	{Name: "egret.slurm.partition", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/slurm",
		Description: "Slurm partition of the topology's batch job (sbatch --partition; checked before submitting); empty: the cluster's default partition."},
	{Name: "egret.slurm.account", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/slurm",
		Description: "Slurm account the job is charged to (sbatch --account); empty: the user's default account."},
	{Name: "egret.slurm.qos", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/slurm",
		Description: "Slurm quality of service of the job (sbatch --qos); empty: the default."},
	{Name: "egret.slurm.time.limit", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/slurm",
		Description: "Time limit of the job in Slurm's format (sbatch --time: minutes, [days-]hours:minutes:seconds, UNLIMITED); empty: the partition's default. Slurm ends the topology at the limit."},
	{Name: "egret.slurm.containers.per.node", Type: TypeInt, Default: "0", File: "scheduler", Backend: "scheduler/slurm", check: checkNonNegative,
		Description: "Containers (tasks) per node (sbatch --ntasks-per-node, with the node count it implies); 0: Slurm places the containers on as few nodes as fit."},
	{Name: "egret.slurm.egret.binary", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/slurm",
		Description: "Absolute path of the egret binary on the compute nodes (installed, or on a shared file system); empty: the egret running the command (the external plugin egret-scheduler-slurm needs it set)."},
	{Name: "egret.slurm.working.directory", Type: TypeString, Default: "/tmp/egret-slurm", File: "scheduler", Backend: "scheduler/slurm",
		Description: "Directory on each compute node under which a job keeps its containers' working directories (<dir>/<job id>/container-<i>); the job removes its directory when it ends; a job that creates the directory makes it mode 1777, like /tmp."},
	{Name: "egret.slurm.sbatch", Type: TypeString, Default: "sbatch", File: "scheduler", Backend: "scheduler/slurm",
		Description: "The sbatch command (a name on PATH or an absolute path)."},
	{Name: "egret.slurm.squeue", Type: TypeString, Default: "squeue", File: "scheduler", Backend: "scheduler/slurm",
		Description: "The squeue command (a name on PATH or an absolute path)."},
	{Name: "egret.slurm.scancel", Type: TypeString, Default: "scancel", File: "scheduler", Backend: "scheduler/slurm",
		Description: "The scancel command (a name on PATH or an absolute path)."},
	{Name: "egret.slurm.scontrol", Type: TypeString, Default: "scontrol", File: "scheduler", Backend: "scheduler/slurm",
		Description: "The scontrol command (a name on PATH or an absolute path)."},
	{Name: "egret.slurm.srun", Type: TypeString, Default: "srun", File: "scheduler", Backend: "scheduler/slurm",
		Description: "The srun command, run by the batch script on the compute nodes and by restart of one container (a name on PATH or an absolute path)."},
	{Name: "egret.slurm.launch.timeout", Type: TypeDuration, Default: "2m", File: "scheduler", Backend: "scheduler/slurm", check: checkPositive,
		Description: "How long submit and update wait for the job's containers to start, and kill for Slurm to end the job; a job not started by then is cancelled."},
	{Name: "egret.slurm.command.timeout", Type: TypeDuration, Default: "30s", File: "scheduler", Backend: "scheduler/slurm", check: checkPositive,
		Description: "Timeout of one Slurm command (a command against an unreachable slurmctld retries for long)."},
	{Name: "egret.yarn.resourcemanager.address", Type: TypeString, Default: "http://127.0.0.1:8088", File: "scheduler", Backend: "scheduler/yarn", check: checkHTTPURL,
		Description: "Web address of the YARN ResourceManager: its Services REST API (/app/v1/services, needs yarn.webapp.api-service.enable=true) and cluster REST API (/ws/v1/cluster)."},
	{Name: "egret.yarn.user", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/yarn",
		Description: "User the topology's service runs as (simple authentication, ?user.name=); empty: $HADOOP_USER_NAME, else the submitting OS user. Kerberos (SPNEGO) is not supported."},
	{Name: "egret.yarn.queue", Type: TypeString, Default: "default", File: "scheduler", Backend: "scheduler/yarn",
		Description: "YARN queue of the topology's application (a leaf queue of the capacity scheduler; checked before submitting)."},
	{Name: "egret.yarn.priority", Type: TypeInt, Default: "0", File: "scheduler", Backend: "scheduler/yarn", check: checkNonNegative,
		Description: "Application priority set after submission (at most yarn.cluster.max-application-priority); 0: the queue's default."},
	{Name: "egret.yarn.node.label", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/yarn",
		Description: "Node label (partition) the containers are placed on; empty: the default partition."},
	{Name: "egret.yarn.am.memory", Type: TypeBytes, Default: "512MiB", File: "scheduler", Backend: "scheduler/yarn", check: checkPositive,
		Description: "Memory of the service's application master (Hadoop's YARN service AM, yarn.service.am-resource.memory)."},
	{Name: "egret.yarn.tmanager.vcores", Type: TypeInt, Default: "1", File: "scheduler", Backend: "scheduler/yarn", check: checkPositive,
		Description: "Virtual cores of container 0 (the topology manager)."},
	{Name: "egret.yarn.tmanager.memory", Type: TypeBytes, Default: "1GiB", File: "scheduler", Backend: "scheduler/yarn", check: checkPositive,
		Description: "Memory of container 0 (the topology manager)."},
	{Name: "egret.yarn.launch.timeout", Type: TypeDuration, Default: "3m", File: "scheduler", Backend: "scheduler/yarn", check: checkPositive,
		Description: "How long submit waits for every container to run; a service not up by then is deleted and the error carries YARN's diagnostics."},
	{Name: "egret.yarn.request.timeout", Type: TypeDuration, Default: "60s", File: "scheduler", Backend: "scheduler/yarn", check: checkPositive,
		Description: "Timeout of one request to the ResourceManager."},

	{Name: "egret.kubernetes.kubeconfig", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/kubernetes",
		Description: "Kubeconfig file naming the API server and the credentials; empty: $KUBECONFIG, else ~/.kube/config, else (inside a pod, with no kubeconfig) the pod's service account (in-cluster config)."},
	{Name: "egret.kubernetes.context", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/kubernetes",
		Description: "Context of the kubeconfig to use; empty: its current-context."},
	{Name: "egret.kubernetes.namespace", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/kubernetes",
		Description: "Namespace of the topologies' StatefulSets, Services and ConfigMaps; empty: the context's namespace, else the pod's (in cluster), else default."},
	{Name: "egret.kubernetes.service.account", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/kubernetes",
		Description: "Service account the pods run as; empty: the namespace's default."},
	{Name: "egret.kubernetes.image", Type: TypeString, Default: "egret/egret:latest", File: "scheduler", Backend: "scheduler/kubernetes",
		Description: "Image of the executor container. It runs the egret of the topology package (egret.package.core.bundle) or of egret.package.core.uri, else the image's own egret (on its PATH)."},
	{Name: "egret.kubernetes.image.pull.policy", Type: TypeEnum, Enum: []string{"Always", "IfNotPresent", "Never"}, Default: "IfNotPresent", File: "scheduler", Backend: "scheduler/kubernetes",
		Description: "imagePullPolicy of the executor and init containers."},
	{Name: "egret.kubernetes.init.image", Type: TypeString, Default: "busybox:1.36", File: "scheduler", Backend: "scheduler/kubernetes",
		Description: "Image of the init container that downloads the topology package (and egret.package.core.uri) into the pod; it needs sh, wget, sha256sum and tar."},
	{Name: "egret.kubernetes.pod.template.patch", Type: TypeString, Default: "", File: "scheduler", Backend: "scheduler/kubernetes",
		Description: "Patch (YAML or JSON, e.g. a block scalar) applied to the StatefulSet's pod template: nodeSelector, tolerations, extra env, sidecars... It is checked at load: the result must be a valid pod template that keeps the executor container, the topology's labels and restartPolicy Always."},
	{Name: "egret.kubernetes.pod.template.patch.type", Type: TypeEnum, Enum: []string{"strategic", "merge"}, Default: "strategic", File: "scheduler", Backend: "scheduler/kubernetes",
		Description: "How egret.kubernetes.pod.template.patch applies: strategic (Kubernetes' strategic merge patch: lists such as containers merge by name) or merge (RFC 7386 JSON merge patch: lists are replaced)."},
	{Name: "egret.kubernetes.schedule.timeout", Type: TypeDuration, Default: "2m", File: "scheduler", Backend: "scheduler/kubernetes", check: checkNonNegative,
		Description: "How long submit and update wait for every pod to be bound to a node; a submit whose pods are not placed by then fails with the Kubernetes scheduler's message (FailedScheduling) and its objects are deleted. 0: do not wait."},
	{Name: "egret.kubernetes.delete.timeout", Type: TypeDuration, Default: "2m", File: "scheduler", Backend: "scheduler/kubernetes", check: checkPositive,
		Description: "How long kill waits for the topology's pods to end after deleting its objects."},
	{Name: "egret.kubernetes.request.timeout", Type: TypeDuration, Default: "30s", File: "scheduler", Backend: "scheduler/kubernetes", check: checkPositive,
		Description: "Timeout of one request to the API server."},
	{Name: "egret.kubernetes.tmanager.cpu", Type: TypeFloat, Default: "1.0", File: "scheduler", Backend: "scheduler/kubernetes", check: checkPositive,
		Description: "CPU cores of container 0 (topology manager), which the packing plan does not size. Every pod gets the largest container's resources (one pod template per StatefulSet)."},
	{Name: "egret.kubernetes.tmanager.ram", Type: TypeBytes, Default: "1GiB", File: "scheduler", Backend: "scheduler/kubernetes", check: checkPositive,
		Description: "Memory of container 0."},
	{Name: "egret.kubernetes.tmanager.disk", Type: TypeBytes, Default: "1GiB", File: "scheduler", Backend: "scheduler/kubernetes", check: checkPositive,
		Description: "Ephemeral storage of container 0."},

	// statemgr.yaml
	{Name: "egret.statemgr", Type: TypeString, Required: true, File: "statemgr", check: checkName,
		Description: "State manager backend: a built-in name (" + strings.Join(builtinStateMgrs, ", ") + ") or an external plugin egret-statemgr-<name>."},
	{Name: "egret.statemgr.root.path", Type: TypeString, Required: true, File: "statemgr",
		Description: "Root of the state tree: a directory for localfs, a znode path for zookeeper."},
	{Name: "egret.statemgr.connection.string", Type: TypeString, Required: true, File: "statemgr", Backend: "statemgr/zookeeper", check: checkHostPorts,
		Description: "ZooKeeper servers as host:port[,host:port...]."},
	{Name: "egret.statemgr.session.timeout", Type: TypeDuration, Default: "30s", File: "statemgr", Backend: "statemgr/zookeeper", check: checkPositive,
		Description: "ZooKeeper session timeout; ephemeral nodes (tmanager location) vanish this long after their owner dies. The localfs state manager reads it too (its default: 10s)."},
	{Name: "egret.statemgr.localfs.poll.interval", Type: TypeDuration, Default: "200ms", File: "statemgr", Backend: "statemgr/localfs", check: checkPositive,
		Description: "How often the localfs state manager polls watched nodes for changes."},
	{Name: "egret.statemgr.connection.timeout", Type: TypeDuration, Default: "30s", File: "statemgr", Backend: "statemgr/zookeeper", check: checkPositive,
		Description: "How long to wait for a ZooKeeper connection."},

	// uploader.yaml
	{Name: "egret.uploader", Type: TypeString, Required: true, File: "uploader", check: checkName,
		Description: "Uploader backend: a built-in name (" + strings.Join(builtinUploaders, ", ") + ") or an external plugin egret-uploader-<name>."},
	{Name: "egret.uploader.localfs.directory", Type: TypeString, Required: true, Default: "${EGRET_HOME}/repository/topologies/${CLUSTER}/${ROLE}/${TOPOLOGY}", File: "uploader", Backend: "uploader/localfs",
		Description: "Directory the topology package is copied to; containers fetch it with a file:// URI."},
	{Name: "egret.uploader.http.uri", Type: TypeString, Required: true, File: "uploader", Backend: "uploader/http", check: checkHTTPURL,
		Description: "Base URL of the package server: the package is sent with HTTP PUT to <uri><name>; the download URI is the server's Location header, else that URL (egret serve-packages serves http://<host>:7780/packages/)."},
	{Name: "egret.uploader.http.token", Type: TypeString, Default: "", File: "uploader", Backend: "uploader/http",
		Description: "Bearer token sent with uploads; empty: none. ${EGRET_UPLOAD_TOKEN:-} reads it from the environment."},
	{Name: "egret.uploader.http.timeout", Type: TypeDuration, Default: "60s", File: "uploader", Backend: "uploader/http", check: checkPositive,
		Description: "Timeout of one upload or delete request."},
	{Name: "egret.uploader.hdfs.namenode", Type: TypeString, Required: true, File: "uploader", Backend: "uploader/hdfs", check: checkHostPorts,
		Description: "HDFS NameNode RPC address(es) as host:port[,host:port] (HA: every NameNode); the first names the returned hdfs:// URIs."},
	{Name: "egret.uploader.hdfs.directory", Type: TypeString, Default: "/egret/topologies/${CLUSTER}/${ROLE}/${TOPOLOGY}", File: "uploader", Backend: "uploader/hdfs",
		Description: "Absolute HDFS directory of the topology's package, one per topology (undo removes it when empty)."},
	{Name: "egret.uploader.hdfs.user", Type: TypeString, Default: "", File: "uploader", Backend: "uploader/hdfs",
		Description: "HDFS user (simple authentication) for uploads and for containers fetching hdfs:// packages; empty: $HADOOP_USER_NAME, else the OS user. Kerberos is not supported."},
	{Name: "egret.uploader.hdfs.replication", Type: TypeInt, Default: "0", File: "uploader", Backend: "uploader/hdfs", check: checkNonNegative,
		Description: "Replication of the package file; 0: the NameNode's default (dfs.replication)."},
	{Name: "egret.uploader.hdfs.file.permission", Type: TypeString, Default: "0644", File: "uploader", Backend: "uploader/hdfs",
		Description: "Octal permission of the package file (YARN's NodeManagers must be able to read it)."},
	{Name: "egret.uploader.hdfs.directory.permission", Type: TypeString, Default: "0755", File: "uploader", Backend: "uploader/hdfs",
		Description: "Octal permission of the directories the uploader creates."},
	{Name: "egret.uploader.hdfs.timeout", Type: TypeDuration, Default: "30s", File: "uploader", Backend: "uploader/hdfs", check: checkPositive,
		Description: "Longest wait for a connection to a NameNode or DataNode."},

	// packing.yaml
	{Name: "egret.packing", Type: TypeString, Default: "roundrobin", File: "packing", check: checkName,
		Description: "Packing algorithm: roundrobin (round robin), ffd (first-fit decreasing), rcrr (resource-compliant round robin), or an external plugin egret-packing-<name>."},
	{Name: "egret.packing.default.instance.cpu", Type: TypeFloat, Default: "1.0", File: "packing", check: checkPositive,
		Description: "CPU cores of an instance whose component sets none."},
	{Name: "egret.packing.default.instance.ram", Type: TypeBytes, Default: "1GiB", File: "packing", check: checkPositive,
		Description: "RAM of an instance whose component sets none."},
	{Name: "egret.packing.default.instance.disk", Type: TypeBytes, Default: "1GiB", File: "packing", check: checkPositive,
		Description: "Disk of an instance whose component sets none."},
	{Name: "egret.packing.padding.percentage", Type: TypeInt, Default: "10", File: "packing", check: checkPercent,
		Description: "Container padding as a percentage of its capacity (ffd, rcrr); the larger of this and the fixed padding applies."},
	{Name: "egret.packing.padding.cpu", Type: TypeFloat, Default: "1.0", File: "packing", check: checkNonNegative,
		Description: "Fixed CPU padding per container for the stream manager and metrics manager."},
	{Name: "egret.packing.padding.ram", Type: TypeBytes, Default: "1GiB", File: "packing", check: checkNonNegative,
		Description: "Fixed RAM padding per container for the stream manager and metrics manager."},
	{Name: "egret.packing.padding.disk", Type: TypeBytes, Default: "1GiB", File: "packing", check: checkNonNegative,
		Description: "Fixed disk padding per container (logs, packages)."},
	{Name: "egret.packing.overhead.cpu", Type: TypeFloat, Default: "0.5", File: "packing", check: checkNonNegative,
		Description: "CPU the daemons of a container (executor, stream manager, metrics manager) need; a container reserves the larger of this and its cpu padding (docs/concepts.md, \"Container size\")."},
	{Name: "egret.packing.overhead.ram", Type: TypeBytes, Default: "144MiB", File: "packing", check: checkNonNegative,
		Description: "RAM the daemons of a container need besides their queues: 48MiB each for the executor, stream manager and metrics manager (docs/backpressure.md, \"Memory bound\"). A container reserves the larger of its ram padding and this plus egret.packing.overhead.ram.per.instance per instance."},
	{Name: "egret.packing.overhead.ram.per.instance", Type: TypeBytes, Default: "16MiB", File: "packing", check: checkNonNegative,
		Description: "RAM the stream manager needs per local instance: its queue toward it (egret.stmgr.buffer.max.bytes) counted twice for the garbage collector."},

	// internals.yaml
	// Effectively-once checkpoints: read by each container's checkpoint
	// manager (egret ckptmgr).
	{Name: "egret.checkpoint.storage", Type: TypeString, Default: "localfs", File: "internals", check: checkName,
		Description: "Checkpoint storage of effectively-once topologies, where each container's checkpoint manager keeps its tasks' state: a built-in name (" + strings.Join(builtinCkpts, ", ") + ") or an external plugin egret-checkpointstorage-<name> in egret.plugin.directory (installed on every node that runs containers)."},
	{Name: "egret.checkpoint.state.max.size", Type: TypeBytes, Default: "64MiB", File: "internals", check: checkPositive,
		Description: "Largest state of one task the checkpoint manager accepts; a larger save request closes the stream manager's connection."},
	{Name: "egret.checkpoint.timeout", Type: TypeDuration, Default: "2m", File: "internals", check: checkPositive,
		Description: "Longest time one save, load or clean of the checkpoint manager may take in the storage; a slower one is answered with an error."},
	{Name: "egret.checkpoint.localfs.root", Type: TypeString, Default: "${EGRET_HOME}/checkpoints/${CLUSTER}", File: "internals", Backend: "checkpointstorage/localfs",
		Description: "Directory of the localfs checkpoint storage, as <root>/<topology>/<checkpoint id>/<task>.state; every container of a topology must see the same directory (one machine, or a shared file system mounted at the same path)."},
	{Name: "egret.checkpoint.hdfs.namenode", Type: TypeString, Required: true, File: "internals", Backend: "checkpointstorage/hdfs", check: checkHostPorts,
		Description: "HDFS NameNode RPC address(es) of the hdfs checkpoint storage, host:port[,host:port] (HA: every NameNode)."},
	{Name: "egret.checkpoint.hdfs.directory", Type: TypeString, Default: "/egret/checkpoints/${CLUSTER}", File: "internals", Backend: "checkpointstorage/hdfs",
		Description: "Absolute HDFS directory of the checkpoints, as <directory>/<topology>/<checkpoint id>/<task>.state."},
	{Name: "egret.checkpoint.hdfs.user", Type: TypeString, Default: "", File: "internals", Backend: "checkpointstorage/hdfs",
		Description: "HDFS user (simple authentication) of the checkpoint managers; empty: $HADOOP_USER_NAME, else the OS user. Kerberos is not supported."},
	{Name: "egret.checkpoint.hdfs.replication", Type: TypeInt, Default: "0", File: "internals", Backend: "checkpointstorage/hdfs", check: checkNonNegative,
		Description: "Replication of the state files; 0: the NameNode's default (dfs.replication)."},
	{Name: "egret.checkpoint.hdfs.timeout", Type: TypeDuration, Default: "30s", File: "internals", Backend: "checkpointstorage/hdfs", check: checkPositive,
		Description: "Longest wait for a connection to a NameNode or DataNode."},

	{Name: "egret.stmgr.buffer.high.watermark.bytes", Type: TypeBytes, Default: "1MiB", File: "internals", check: checkPositive,
		Description: "Bytes queued toward one instance or peer at which a stream manager starts back pressure (stops reading its spouts and tells its peers to); at most half of egret.stmgr.buffer.max.bytes."},
	{Name: "egret.stmgr.buffer.low.watermark.bytes", Type: TypeBytes, Default: "512KiB", File: "internals", check: checkPositive,
		Description: "Back pressure is released when every queue is below this; below the high watermark."},
	{Name: "egret.stmgr.socket.buffer.bytes", Type: TypeBytes, Default: "256KiB", File: "internals", check: checkNonNegative,
		Description: "Kernel send and receive buffers of the stream managers' data connections; 0: the kernel sizes them (up to several MiB per connection on Linux). Bytes in kernel buffers are invisible to the watermarks, so they are kept small."},
	{Name: "egret.stmgr.ack.ledger.max.roots", Type: TypeInt, Default: "262144", File: "internals", check: checkPositive,
		Description: "At-least-once: pending roots each spout task's ledger (in its container's stream manager) may hold; a root registered beyond it fails at once and the spout replays it."},
	{Name: "egret.stmgr.batch.max.bytes", Type: TypeBytes, Default: "64KiB", File: "internals", check: checkPositive,
		Description: "A tuple batch is written when it reaches this size (or at once when the connection is idle)."},
	{Name: "egret.stmgr.heartbeat.interval", Type: TypeDuration, Default: "1s", File: "internals", check: checkPositive,
		Description: "Interval of stream manager heartbeats to the tmanager."},
	{Name: "egret.stmgr.buffer.max.bytes", Type: TypeBytes, Default: "8MiB", File: "internals", check: checkPositive,
		Description: "Bound of a stream manager's queue toward one destination (instance or peer stream manager)."},
	{Name: "egret.wire.max.frame.bytes", Type: TypeBytes, Default: "16MiB", File: "internals", check: checkPositive,
		Description: "Largest frame a daemon accepts; a peer sending a larger one is disconnected."},
	{Name: "egret.tmanager.establish.timeout", Type: TypeDuration, Default: "60s", File: "internals", check: checkPositive,
		Description: "How long a starting tmanager retries while another session holds the tmanager location."},
	{Name: "egret.executor.restart.reset.after", Type: TypeDuration, Default: "60s", File: "internals", check: checkPositive,
		Description: "A process that stays up this long has its restart backoff reset."},
	{Name: "egret.executor.stop.grace", Type: TypeDuration, Default: "10s", File: "internals", check: checkPositive,
		Description: "How long the executor waits after SIGTERM before it kills a child with SIGKILL."},
	{Name: "egret.instance.gomaxprocs", Type: TypeInt, Default: "0", File: "internals", check: checkNonNegative,
		Description: "GOMAXPROCS of instance processes; 0: the instance's cpu in the packing plan, rounded up, at least 1 (set by the executor, docs/isolation.md). The GOMAXPROCS environment variable wins. 1 saves the Go scheduler's cross-thread wake-ups (docs/benchmarks.md) at the cost of peak throughput per instance."},
	{Name: "egret.instance.heap.floor", Type: TypeBytes, Default: "16MiB", File: "internals", check: checkPositive,
		Description: "Heap growth an instance allows between two garbage collections while its live heap is smaller (a process per container: this times its instances). Instances allocate for every tuple they receive and keep little live: a larger floor makes collections rarer (less CPU: docs/benchmarks.md, issue 18's second round) for up to this much more memory per instance (docs/backpressure.md). Setting GOGC turns the floor off."},
	{Name: "egret.executor.cgroups", Type: TypeEnum, Enum: []string{"auto", "off"}, Default: "auto", File: "internals",
		Description: "auto: where the executor may create cgroups (v2 with cpu and memory delegated, or v1), every process of the container gets its own, with the cpu and memory of its share of the packing plan; otherwise, and with off, only GOMAXPROCS, GOMEMLIMIT and the executor's RSS watchdog apply (docs/isolation.md)."},
	{Name: "egret.executor.monitor.interval", Type: TypeDuration, Default: "2s", File: "internals", check: checkPositive,
		Description: "How often the executor reads the resource use of its processes (cgroup counters and RSS each interval, the disk of each instance's working directory every fifth), kills an instance over its memory without cgroups, and publishes resource.* metrics."},
	{Name: "egret.instance.queue.max.bytes", Type: TypeBytes, Default: "1MiB", File: "internals", check: checkPositive,
		Description: "Bound of an instance's inbound and outbound queues, each (at most 1GiB). Both are outside the stream manager's watermarks: under back pressure they stay full, so they add to the instance's memory and to the tuples in flight (docs/backpressure.md)."},
	{Name: "egret.tmanager.heartbeat.timeout", Type: TypeDuration, Default: "5s", File: "internals", check: checkPositive,
		Description: "A stream manager silent this long is evicted by the tmanager; above the heartbeat interval."},
	{Name: "egret.executor.restart.backoff.initial", Type: TypeDuration, Default: "1s", File: "internals", check: checkPositive,
		Description: "First delay before the executor restarts a dead process; doubles on each restart."},
	{Name: "egret.executor.restart.backoff.max", Type: TypeDuration, Default: "1m", File: "internals", check: checkPositive,
		Description: "Largest restart delay."},
	{Name: "egret.metrics.export.interval", Type: TypeDuration, Default: "10s", File: "internals", check: checkPositive,
		Description: "Interval at which processes send their metrics to the metrics manager."},
	{Name: "egret.logging.max.size", Type: TypeBytes, Default: "100MiB", File: "internals", check: checkPositive,
		Description: "Size at which the executor rotates the log of each process it runs (logs/<process>.log becomes <process>.log.1, older ones shift up). A file exceeds it only by a single write larger than it (a process's output reaches the file in pieces of at most 32KiB)."},
	{Name: "egret.logging.max.files", Type: TypeInt, Default: "5", File: "internals", check: checkPositive,
		Description: "Rotated files kept per log besides the current one (<process>.log.1 ... .N); the oldest is deleted."},

	// metrics_sinks.yaml
	{Name: "egret.metrics.sinks", Type: TypeList, Default: "file,tmanager", File: "metrics_sinks", check: checkSinks,
		Description: "Metrics sinks each metrics manager feeds: file (JSON lines in the container's metrics.jsonl, rotated by egret.metrics.file.max.size and .max.files), tmanager (forwarded to the topology manager, for egret metrics and the tracker), prometheus (a scrape endpoint per container, GET /metrics), graphite (plaintext lines to a carbon receiver), or the name of an external sink plugin egret-metricssink-<name> in egret.plugin.directory; empty: none."},
	{Name: "egret.metrics.prometheus.port", Type: TypeInt, Default: "0", File: "metrics_sinks", Backend: "metricssink/prometheus", check: checkPort,
		Description: "Port of each container's Prometheus endpoint, on $EGRET_BIND_HOST (else every interface); 0: any free port. A port the resource manager assigns ($EGRET_PORT_METRICS: Nomad, Mesos) wins. The bound address is written to prometheus-targets.json (file_sd format) in the container's working directory."},
	{Name: "egret.metrics.graphite.address", Type: TypeString, Default: "", File: "metrics_sinks", Backend: "metricssink/graphite", check: checkHostPorts,
		Description: "host:port of the carbon plaintext line receiver the graphite sink writes to (required by it)."},
	{Name: "egret.metrics.graphite.prefix", Type: TypeString, Default: "egret", File: "metrics_sinks", Backend: "metricssink/graphite", check: checkGraphitePrefix,
		Description: "First part of every Graphite path: <prefix>.<topology>.<component>.<task>.<metric> for an instance, <prefix>.<topology>.<daemon>.<container>.<metric> for a daemon."},
	{Name: "egret.metrics.file.max.size", Type: TypeBytes, Default: "64MiB", File: "metrics_sinks", Backend: "metricssink/file", check: checkPositive,
		Description: "Size at which the file sink rotates metrics.jsonl (to metrics.jsonl.1, older ones shift up); a file exceeds it by at most one report."},
	{Name: "egret.metrics.file.max.files", Type: TypeInt, Default: "1", File: "metrics_sinks", Backend: "metricssink/file", check: checkPositive,
		Description: "Rotated files of the file sink kept besides the current one (metrics.jsonl.1 ... .N); the oldest is deleted."},
}

// removedKeys were once documented but nothing read them; a config that
// still sets one is told so instead of having it pass as a plugin's key.
// name also covers the keys below it.
var removedKeys = []struct{ name, why string }{
	{"egret.scheduler.is.service", "the scheduler decides whether it runs as a service (local) or inside the CLI (nomad)"},
	{"egret.statemgr.initialize.tree", "the state managers always create their tree"},
	{"egret.statemgr.retry", "the zookeeper state manager retries a repeatable operation after a connection loss until the command's deadline, with its own backoff"},
	{"egret.logging.directory", "logs are always in the logs/ directory of a container's working directory"},
	{"egret.metrics.sink", "the file sink always writes metrics.jsonl in the container's working directory and the tmanager sink forwards every report at once"},
}

// crossChecks relate two keys; each returns a message or "".
var crossChecks = []struct {
	a, b string // the problem is reported on a, a must be < (or <=) b
	le   bool
}{
	{a: "egret.stmgr.buffer.low.watermark.bytes", b: "egret.stmgr.buffer.high.watermark.bytes"},
	{a: "egret.stmgr.batch.max.bytes", b: "egret.stmgr.buffer.low.watermark.bytes", le: true},
	{a: "egret.executor.restart.backoff.initial", b: "egret.executor.restart.backoff.max", le: true},
	{a: "egret.stmgr.heartbeat.interval", b: "egret.tmanager.heartbeat.timeout"},
}

var schemaIndex = func() map[string]int {
	m := make(map[string]int, len(schema))
	for i, k := range schema {
		if _, dup := m[k.Name]; dup {
			panic("conf: schema key " + k.Name + " defined twice")
		}
		m[k.Name] = i
	}
	return m
}()

// Schema returns a copy of the schema table, in table order.
func Schema() []Key {
	out := make([]Key, len(schema))
	for i, k := range schema {
		k.Enum = slices.Clone(k.Enum)
		out[i] = k
	}
	return out
}

// LookupKey returns the schema entry of name.
func LookupKey(name string) (Key, bool) {
	i, ok := schemaIndex[strings.ToLower(name)]
	if !ok {
		return Key{}, false
	}
	k := schema[i]
	k.Enum = slices.Clone(k.Enum)
	return k, true
}

func lookupKey(name string) (*Key, bool) {
	i, ok := schemaIndex[name]
	if !ok {
		return nil, false
	}
	return &schema[i], true
}
