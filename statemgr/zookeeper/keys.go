package zookeeper

import "github.com/egret-stream/egret/core/spi"

// configKeys are the config keys the zookeeper state manager reads, registered with
// its factory: conf derives the schema, the defaults, the validation and
// conf/REFERENCE.md from them.
var configKeys = []spi.Key{
	{Name: KeyConnectionString, Type: spi.KeyString, Required: true, Check: spi.CheckHostPorts,
		Doc: "ZooKeeper servers as host:port[,host:port...]."},
	{Name: KeySessionTimeout, Type: spi.KeyDuration, Default: "30s", Check: spi.CheckPositive,
		Doc: "ZooKeeper session timeout; ephemeral nodes (tmanager location) vanish this long after their owner dies. The localfs state manager reads it too (its default: 10s)."},
	{Name: KeyConnectTimeout, Type: spi.KeyDuration, Default: "30s", Check: spi.CheckPositive,
		Doc: "How long to wait for a ZooKeeper connection."},
}
