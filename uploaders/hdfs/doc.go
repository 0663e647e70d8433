// Package hdfs is the "hdfs" uploader: it stores topology packages in HDFS,
// where a YARN NodeManager localizes them for the topology's containers
// (or the executor fetches them itself, see internal/fetch), and returns
// hdfs://<namenode>/<directory>/<topology>-<role>-<sha256[:12]>.tar.gz.
//
// Config (conf/REFERENCE.md describes every key):
//
//	egret.uploader: hdfs
//	egret.uploader.hdfs.namenode: namenode.example.com:8020     # required; nn1:8020,nn2:8020 for HA
//	egret.uploader.hdfs.directory: /egret/topologies/${CLUSTER}/${ROLE}/${TOPOLOGY}   # required, one per topology
//	egret.uploader.hdfs.user: ""                 # simple auth; empty: $HADOOP_USER_NAME, else the OS user
//	egret.uploader.hdfs.replication: 0           # 0: the NameNode's default (dfs.replication)
//	egret.uploader.hdfs.file.permission: "0644"
//	egret.uploader.hdfs.directory.permission: "0755"
//	egret.uploader.hdfs.timeout: 30s             # longest wait for a connection
//
// Upload writes the package under a temporary name (.egret-tmp-*) in the
// directory with the configured replication and permission, hashes what it
// writes, checks the digest, and renames the file into place, so a reader
// never sees a partial package. The directory (and its missing parents) is
// created with the directory permission. Undo removes the package and then
// the directory if it is left empty; it refuses URIs outside the
// configured NameNode and directory. Only simple authentication is
// supported: Kerberos (SASL) is not.
package hdfs
