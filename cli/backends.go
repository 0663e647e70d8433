package cli

import (
	"go.uber.org/zap"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/launcher"
)

// newBackends returns how the CLI creates backends for a cluster.
func newBackends(_ *conf.Cluster, log *zap.Logger) launcher.Backends {
	return launcher.Builtins{Log: log}
}
