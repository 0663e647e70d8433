// Command egret-scheduler-nomad serves Egret's Nomad scheduler as an
// external plugin: put it in the plugin directory (egret.plugin.directory)
// and select it with egret.scheduler. The same scheduler is built into
// egret as "nomad"; the binary shows that a scheduler can live outside the
// core.
package main

import (
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/schedulers/nomad"
)

func main() { plugins.ServeScheduler(nomad.New) }
