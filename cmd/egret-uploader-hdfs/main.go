// Command egret-uploader-hdfs serves Egret's HDFS uploader as an external
// plugin: put it in the plugin directory (egret.plugin.directory) and
// select it with egret.uploader. The same uploader is built into egret as
// "hdfs".
package main

import (
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/uploaders/hdfs"
)

func main() { plugins.ServeUploader(hdfs.New) }
