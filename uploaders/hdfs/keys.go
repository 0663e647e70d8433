package hdfs

import "github.com/egret-stream/egret/core/spi"

// configKeys are the config keys the hdfs uploader reads, registered with
// its factory: conf derives the schema, the defaults, the validation and
// conf/REFERENCE.md from them.
var configKeys = []spi.Key{
	{Name: KeyNameNode, Type: spi.KeyString, Required: true, Check: spi.CheckHostPorts,
		Doc: "HDFS NameNode RPC address(es) as host:port[,host:port] (HA: every NameNode); the first names the returned hdfs:// URIs."},
	{Name: KeyDirectory, Type: spi.KeyString, Default: "/egret/topologies/${CLUSTER}/${ROLE}/${TOPOLOGY}",
		Doc: "Absolute HDFS directory of the topology's package, one per topology (undo removes it when empty)."},
	{Name: KeyUser, Type: spi.KeyString, Default: "",
		Doc: "HDFS user (simple authentication) for uploads and for containers fetching hdfs:// packages; empty: $HADOOP_USER_NAME, else the OS user. Kerberos is not supported."},
	{Name: KeyReplication, Type: spi.KeyInt, Default: "0", Check: spi.CheckNonNegative,
		Doc: "Replication of the package file; 0: the NameNode's default (dfs.replication)."},
	{Name: KeyFilePerm, Type: spi.KeyString, Default: "0644",
		Doc: "Octal permission of the package file (YARN's NodeManagers must be able to read it)."},
	{Name: KeyDirectoryPerm, Type: spi.KeyString, Default: "0755",
		Doc: "Octal permission of the directories the uploader creates."},
	{Name: KeyTimeout, Type: spi.KeyDuration, Default: "30s", Check: spi.CheckPositive,
		Doc: "Longest wait for a connection to a NameNode or DataNode."},
}
