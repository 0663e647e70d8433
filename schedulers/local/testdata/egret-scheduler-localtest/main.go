// Command egret-scheduler-localtest serves the local scheduler as an
// external scheduler plugin, so that the local scheduler's tests can run the
// conformance suite across the plugin boundary.
package main

import (
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/schedulers/local"
)

func main() { plugins.ServeScheduler(local.New) }
