// Command egret-scheduler-example is an example external scheduler plugin
// for Egret: a library-mode scheduler whose "resource manager" is a JSON
// file of allocations. Build it, put it in the plugin directory and select
// it with `egret.scheduler: example`; see README.md.
package main

import (
	"go.uber.org/zap"

	"github.com/egret-stream/egret/cmd/egret-scheduler-example/example"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
)

func main() {
	// The observer lets `egret plugin verify` run the scheduler conformance
	// suite against this binary: it reads the resource manager (the state
	// file), never the scheduler's report.
	// WithKeys declares its config keys, which egret then checks.
	plugins.ServeScheduler(example.New, plugins.WithKeys(example.Keys...), plugins.WithObserver(func(cfg spi.Config, _ *zap.Logger) (plugins.Observer, error) {
		return example.NewObserver(cfg)
	}))
}
