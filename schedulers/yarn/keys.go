package yarn

import "github.com/egret-stream/egret/core/spi"

// configKeys are the config keys the yarn scheduler reads, registered with
// its factory: conf derives the schema, the defaults, the validation and
// conf/REFERENCE.md from them.
var configKeys = []spi.Key{
	{Name: KeyResourceManager, Type: spi.KeyString, Default: "http://127.0.0.1:8088", Check: spi.CheckHTTPURL,
		Doc: "Web address of the YARN ResourceManager: its Services REST API (/app/v1/services, needs yarn.webapp.api-service.enable=true) and cluster REST API (/ws/v1/cluster)."},
	{Name: KeyUser, Type: spi.KeyString, Default: "",
		Doc: "User the topology's service runs as (simple authentication, ?user.name=); empty: $HADOOP_USER_NAME, else the submitting OS user. Kerberos (SPNEGO) is not supported."},
	{Name: KeyQueue, Type: spi.KeyString, Default: "default",
		Doc: "YARN queue of the topology's application (a leaf queue of the capacity scheduler; checked before submitting)."},
	{Name: KeyPriority, Type: spi.KeyInt, Default: "0", Check: spi.CheckNonNegative,
		Doc: "Application priority set after submission (at most yarn.cluster.max-application-priority); 0: the queue's default."},
	{Name: KeyNodeLabel, Type: spi.KeyString, Default: "",
		Doc: "Node label (partition) the containers are placed on; empty: the default partition."},
	{Name: KeyAMMemory, Type: spi.KeyBytes, Default: "512MiB", Check: spi.CheckPositive,
		Doc: "Memory of the service's application master (Hadoop's YARN service AM, yarn.service.am-resource.memory)."},
	{Name: KeyTManagerVcores, Type: spi.KeyInt, Default: "1", Check: spi.CheckPositive,
		Doc: "Virtual cores of container 0 (the topology manager)."},
	{Name: KeyTManagerMemory, Type: spi.KeyBytes, Default: "1GiB", Check: spi.CheckPositive,
		Doc: "Memory of container 0 (the topology manager)."},
	{Name: KeyLaunchTimeout, Type: spi.KeyDuration, Default: "3m", Check: spi.CheckPositive,
		Doc: "How long submit waits for every container to run; a service not up by then is deleted and the error carries YARN's diagnostics."},
	{Name: KeyRequestTimeout, Type: spi.KeyDuration, Default: "60s", Check: spi.CheckPositive,
		Doc: "Timeout of one request to the ResourceManager."},
}
