// Package hdfs is the "hdfs" checkpoint storage (spi.CheckpointStorage):
// each task's state of each checkpoint is a file in HDFS, which every
// container of a topology reaches wherever it runs. It uses
// github.com/colinmarc/hdfs/v2 with simple authentication and shares its
// client config (NameNode addresses, user, timeout) with the hdfs
// uploader through internal/hdfsx.
//
// Config:
//
//	egret.checkpoint.storage: hdfs
//	egret.checkpoint.hdfs.namenode: namenode.example.com:8020   # required; HA: nn1:8020,nn2:8020
//	egret.checkpoint.hdfs.directory: /egret/checkpoints/${CLUSTER}
//	egret.checkpoint.hdfs.user: ""          # default $HADOOP_USER_NAME, else the OS user
//	egret.checkpoint.hdfs.replication: 0    # 0: the NameNode's dfs.replication
//	egret.checkpoint.hdfs.timeout: 30s
//
// Layout and file format are those of the localfs storage:
// <directory>/<topology>/<checkpoint id>/<task>.state, a 16-byte header
// (length, CRC-32C) before the state. A store writes a temp file next to
// the state file, waits until HDFS has the last block replicated (close),
// then renames it over the state file, so a reader sees the old state or
// the new one, never part of one. A delete renames the checkpoint's
// directory out of sight before removing it.
//
// HDFS calls take no context: a context is checked between calls, and
// every connection is bounded by the timeout.
package hdfs
