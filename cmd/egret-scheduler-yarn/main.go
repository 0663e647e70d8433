// Command egret-scheduler-yarn serves Egret's YARN scheduler as an
// external plugin: put it in the plugin directory (egret.plugin.directory)
// and select it with egret.scheduler. The same scheduler is built into
// egret as "yarn".
package main

import (
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/schedulers/yarn"
)

func main() { plugins.ServeScheduler(yarn.New) }
