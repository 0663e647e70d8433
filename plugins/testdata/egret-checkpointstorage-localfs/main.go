// Command egret-checkpointstorage-localfs serves the built-in localfs
// checkpoint storage as a plugin: the test plugin of the checkpoint storage
// kind (conformance across the plugin boundary, egret plugin verify, and
// the checkpoint manager with a plugin storage).
package main

import (
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"

	_ "github.com/egret-stream/egret/checkpoints/localfs"
)

func main() { plugins.ServeBuiltin(spi.KindCheckpointStorage, "localfs") }
