package mesos

import "github.com/egret-stream/egret/core/spi"

// configKeys are the config keys the mesos scheduler reads, registered with
// its factory: conf derives the schema, the defaults, the validation and
// conf/REFERENCE.md from them.
var configKeys = []spi.Key{
	{Name: KeyMasterURI, Type: spi.KeyString, Default: "http://127.0.0.1:5050", Check: spi.CheckHTTPURL,
		Doc: "Mesos master address; the framework calls its v1 scheduler API at <uri>/api/v1/scheduler."},
	{Name: KeyRole, Type: spi.KeyString, Default: "*",
		Doc: "Mesos role the framework subscribes with; offers of resources reserved for it, or unreserved (*), are used."},
	{Name: KeyPrincipal, Type: spi.KeyString, Default: "",
		Doc: "Mesos principal of the framework (FrameworkInfo.principal, and the HTTP basic authentication user); empty: none."},
	{Name: KeySecret, Type: spi.KeyString, Default: "",
		Doc: "Secret of the principal for HTTP basic authentication; ${MESOS_SECRET:-} reads it from the environment. Empty: no authentication."},
	{Name: KeyUser, Type: spi.KeyString, Default: "",
		Doc: "User the tasks run as on the agents (FrameworkInfo.user); empty: the user running the framework."},
	{Name: KeyFailoverTimeout, Type: spi.KeyDuration, Default: "168h", Check: spi.CheckPositive,
		Doc: "How long the master keeps the tasks of a disconnected framework for it to fail over (FrameworkInfo.failover_timeout)."},
	{Name: KeyCheckpoint, Type: spi.KeyBool, Default: "true",
		Doc: "Agents checkpoint the tasks, so they survive an agent restart (FrameworkInfo.checkpoint)."},
	{Name: KeySubscribeTimeout, Type: spi.KeyDuration, Default: "30s", Check: spi.CheckPositive,
		Doc: "How long a new framework tries to subscribe before the submission fails (an unreachable master)."},
	{Name: KeyOfferRefuse, Type: spi.KeyDuration, Default: "5s", Check: spi.CheckPositive,
		Doc: "Refuse filter of declined offers and of the unused part of accepted ones (refuse_seconds)."},
	{Name: KeyOfferTimeout, Type: spi.KeyDuration, Default: "2m", Check: spi.CheckPositive,
		Doc: "How long a container waits for an offer big enough before the framework reports which resource is short and by how much (submit and update fail)."},
	{Name: KeyLaunchTimeout, Type: spi.KeyDuration, Default: "5m", Check: spi.CheckPositive,
		Doc: "How long submit and update wait for every container's task to run."},
	{Name: KeyBackoffInitial, Type: spi.KeyDuration, Default: "1s", Check: spi.CheckPositive,
		Doc: "Delay before relaunching a container whose task ended unasked (failed, lost); it doubles per failure in a row."},
	{Name: KeyBackoffMax, Type: spi.KeyDuration, Default: "1m", Check: spi.CheckPositive,
		Doc: "Upper bound of the relaunch delay."},
	{Name: KeyTManagerCPU, Type: spi.KeyFloat, Default: "1.0", Check: spi.CheckPositive,
		Doc: "CPU cores of container 0 (topology manager and metrics manager), which the packing plan does not size."},
	{Name: KeyTManagerRAM, Type: spi.KeyBytes, Default: "1GiB", Check: spi.CheckPositive,
		Doc: "Memory of container 0."},
	{Name: KeyTManagerDisk, Type: spi.KeyBytes, Default: "1GiB", Check: spi.CheckPositive,
		Doc: "Disk of container 0."},
	{Name: KeyFrameworkBinary, Type: spi.KeyString, Default: "",
		Doc: "Binary that runs the topology's framework service (`<binary> mesos-framework --work-dir W`): egret or egret-scheduler-mesos; empty: the running one."},
}
