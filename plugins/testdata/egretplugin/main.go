// Command egretplugin is the test plugin binary of package plugins. It is
// installed under several names and serves the plugin its name selects:
//
//	egret-statemgr-memory        in-memory state manager (fakes.NewMemory)
//	egret-uploader-fs            the built-in localfs uploader
//	egret-packing-percomponent   packing with Repack
//	egret-packing-packonly       packing without Repack
//	egret-scheduler-recorder     recording scheduler with Launch and scaling
//	egret-scheduler-basic        recording scheduler, no optional capability
//	egret-scheduler-noisy        writes to stdout before serving (breaks the handshake)
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/plugins/internal/fakes"

	_ "github.com/egret-stream/egret/uploaders/localfs"
)

func main() {
	switch name := filepath.Base(os.Args[0]); name {
	case "egret-statemgr-memory":
		plugins.ServeStateManager(fakes.NewMemory)
	case "egret-uploader-fs":
		plugins.ServeBuiltin(spi.KindUploader, "localfs")
	case "egret-packing-percomponent":
		plugins.ServePacking(fakes.NewRepackingPerComponent)
	case "egret-packing-packonly":
		plugins.ServePacking(fakes.NewPerComponent)
	case "egret-scheduler-recorder":
		plugins.ServeScheduler(fakes.NewLaunchingRecorder)
	case "egret-scheduler-basic":
		plugins.ServeScheduler(fakes.NewRecorder)
	case "egret-scheduler-noisy":
		fmt.Println("hello from a plugin that prints before Serve")
		plugins.ServeScheduler(fakes.NewRecorder)
	default:
		fmt.Fprintf(os.Stderr, "egretplugin: unknown plugin name %q\n", name)
		os.Exit(1)
	}
}
