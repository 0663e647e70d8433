// Command egret-scheduler-aurora serves Egret's Aurora scheduler as an
// external plugin: put it in the plugin directory (egret.plugin.directory)
// and select it with egret.scheduler. The same scheduler is built into
// egret as "aurora".
package main

import (
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/schedulers/aurora"
)

func main() { plugins.ServeScheduler(aurora.New) }
