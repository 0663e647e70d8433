package aurora

import "github.com/egret-stream/egret/core/spi"

// configKeys are the config keys the aurora scheduler reads, registered with
// its factory: conf derives the schema, the defaults, the validation and
// conf/REFERENCE.md from them.
var configKeys = []spi.Key{
	{Name: KeySchedulerURI, Type: spi.KeyString, Default: "http://127.0.0.1:8081", Check: spi.CheckHTTPURL,
		Doc: "Address of the Aurora scheduler; its Thrift API is served at <address>/api and job pages at <address>/scheduler/<role>/<env>/<topology>."},
	{Name: KeyCluster, Type: spi.KeyString, Default: "devcluster",
		Doc: "Aurora cluster name (<cluster>/<role>/<env>/<topology>); must be the name the scheduler reports, and goes into the Thermos job."},
	{Name: KeyRole, Type: spi.KeyString, Default: "${ROLE}",
		Doc: "Role of the topology's Aurora job (a Unix account on the agents); the role of `egret <command> aurora/<role>/<env>` wins when given."},
	{Name: KeyEnviron, Type: spi.KeyString, Default: "${ENVIRON}",
		Doc: "Environment of the topology's Aurora job (the scheduler accepts prod, devel, test, staging<N> by default); the env of `egret <command> aurora/<role>/<env>` wins when given."},
	{Name: KeyUsername, Type: spi.KeyString, Default: "",
		Doc: "User for HTTP basic authentication to the Aurora scheduler; empty: none."},
	{Name: KeyPassword, Type: spi.KeyString, Default: "",
		Doc: "Password for HTTP basic authentication; ${EGRET_AURORA_PASSWORD:-} reads it from the environment."},
	{Name: KeyWaitTimeout, Type: spi.KeyDuration, Default: "5m", Check: spi.CheckPositive,
		Doc: "Longest wait for every instance to reach RUNNING on submit (the job is killed when one fails or does not run in time) and for killed instances to end."},
	{Name: KeyKillAttempts, Type: spi.KeyInt, Default: "5", Check: spi.CheckPositive,
		Doc: "Attempts to kill the Aurora job when the scheduler is unreachable or answers a transient error (a failover)."},
	{Name: KeyKillRetry, Type: spi.KeyDuration, Default: "2s", Check: spi.CheckPositive,
		Doc: "Pause between kill attempts."},
}
