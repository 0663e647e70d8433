// Command egret-scheduler-example is an example external scheduler plugin
// for Egret: a library-mode scheduler whose "resource manager" is a JSON
// file of allocations. Build it, put it in the plugin directory and select
// it with `egret.scheduler: example`; see README.md.
package main

import (
	"github.com/egret-stream/egret/cmd/egret-scheduler-example/example"
	"github.com/egret-stream/egret/plugins"
)

func main() { plugins.ServeScheduler(example.New) }
