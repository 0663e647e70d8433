// Command egret-statemgr-localfs serves the built-in localfs state manager
// as a plugin, to run the state manager conformance suite across the plugin
// boundary.
package main

import (
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"

	_ "github.com/egret-stream/egret/statemgr/localfs"
)

func main() { plugins.ServeBuiltin(spi.KindStateManager, "localfs") }
