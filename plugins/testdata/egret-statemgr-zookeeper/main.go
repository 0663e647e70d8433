// Command egret-statemgr-zookeeper serves the built-in ZooKeeper state
// manager as a plugin, to run the state manager conformance suite across
// the plugin boundary against a real ZooKeeper.
package main

import (
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"

	_ "github.com/egret-stream/egret/statemgr/zookeeper"
)

func main() { plugins.ServeBuiltin(spi.KindStateManager, "zookeeper") }
