// Command egret-checkpointstorage-hdfs serves Egret's HDFS checkpoint
// storage as an external plugin: put it in the plugin directory
// (egret.plugin.directory) and select it with egret.checkpoint.storage.
// The same storage is built into egret as "hdfs".
package main

import (
	"github.com/egret-stream/egret/checkpoints/hdfs"
	"github.com/egret-stream/egret/plugins"
)

func main() { plugins.ServeCheckpointStorage(hdfs.New) }
