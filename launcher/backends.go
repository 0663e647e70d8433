package launcher

import (
	"context"

	"github.com/egret-stream/egret/core/spi"
)

// Backends creates the SPI implementations a cluster config selects
// (egret.statemgr, egret.uploader, egret.packing, egret.scheduler): built
// in or loaded as plugins (the CLI's implementation uses package plugins).
type Backends interface {
	StateManager(ctx context.Context, cfg spi.Config) (spi.StateManager, error)
	Uploader(ctx context.Context, cfg spi.Config) (spi.Uploader, error)
	Packing(ctx context.Context, cfg spi.Config) (spi.Packing, error)
	Scheduler(ctx context.Context, cfg spi.Config) (spi.Scheduler, error)
}
