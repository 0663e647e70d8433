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

// CheckpointStorages is implemented by Backends that also create the
// checkpoint storage (egret.checkpoint.storage): kill then removes the
// checkpoints of an effectively-once topology.
type CheckpointStorages interface {
	CheckpointStorage(ctx context.Context, cfg spi.Config) (spi.CheckpointStorage, error)
}
