package hdfs

import "github.com/egret-stream/egret/core/spi"

// configKeys are the config keys the hdfs checkpoint storage reads, registered with
// its factory: conf derives the schema, the defaults, the validation and
// conf/REFERENCE.md from them.
var configKeys = []spi.Key{
	{Name: KeyNameNode, Type: spi.KeyString, Required: true, Check: spi.CheckHostPorts,
		Doc: "HDFS NameNode RPC address(es) of the hdfs checkpoint storage, host:port[,host:port] (HA: every NameNode)."},
	{Name: KeyDirectory, Type: spi.KeyString, Default: "/egret/checkpoints/${CLUSTER}",
		Doc: "Absolute HDFS directory of the checkpoints, as <directory>/<topology>/<checkpoint id>/<task>.state."},
	{Name: KeyUser, Type: spi.KeyString, Default: "",
		Doc: "HDFS user (simple authentication) of the checkpoint managers; empty: $HADOOP_USER_NAME, else the OS user. Kerberos is not supported."},
	{Name: KeyReplication, Type: spi.KeyInt, Default: "0", Check: spi.CheckNonNegative,
		Doc: "Replication of the state files; 0: the NameNode's default (dfs.replication)."},
	{Name: KeyTimeout, Type: spi.KeyDuration, Default: "30s", Check: spi.CheckPositive,
		Doc: "Longest wait for a connection to a NameNode or DataNode."},
}
