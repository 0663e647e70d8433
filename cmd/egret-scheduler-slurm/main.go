// Command egret-scheduler-slurm serves Egret's Slurm scheduler as an
// external plugin: put it in the plugin directory (egret.plugin.directory)
// and select it with egret.scheduler. The same scheduler is built into
// egret as "slurm".
package main

import (
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/schedulers/slurm"
)

func main() { plugins.ServeScheduler(slurm.New) }
