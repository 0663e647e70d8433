// Command egret-scheduler-mesos serves Egret's Mesos scheduler as an
// external plugin: put it in the plugin directory (egret.plugin.directory)
// and select it with egret.scheduler. It also runs a topology's framework
// service (`egret-scheduler-mesos mesos-framework --work-dir W`), which the
// plugin starts for submit. The same scheduler is built into egret as
// "mesos".
package main

import (
	"os"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/schedulers/mesos"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == mesos.FrameworkCommand {
		cfg := zap.NewProductionConfig()
		cfg.DisableStacktrace = true
		log, err := cfg.Build()
		if err != nil {
			log = zap.NewNop()
		}
		os.Exit(mesos.FrameworkMain(os.Args[2:], os.Stderr, log))
	}
	plugins.ServeScheduler(mesos.New)
}
