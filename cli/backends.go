package cli

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
)

// backends creates the backends a cluster config selects: a built-in when
// one has the name, else the external plugin egret-<kind>-<name> from the
// plugin directory (egret.plugin.directory). Close kills every plugin it
// started.
type backends struct {
	log     *zap.Logger
	loaders map[string]*plugins.Loader
}

func newBackends(log *zap.Logger) *backends {
	return &backends{log: log, loaders: map[string]*plugins.Loader{}}
}

func (b *backends) loader(cfg spi.Config) *plugins.Loader {
	dir := cfg.String("egret.plugin.directory", "")
	l, ok := b.loaders[dir]
	if !ok {
		l = plugins.NewLoader(dir, b.log.Named("plugins"))
		b.loaders[dir] = l
	}
	return l
}

func name(cfg spi.Config, key string) (string, error) {
	n := cfg.String(key, "")
	if n == "" {
		return "", fmt.Errorf("config key %s is not set", key)
	}
	return n, nil
}

func (b *backends) StateManager(ctx context.Context, cfg spi.Config) (spi.StateManager, error) {
	n, err := name(cfg, "egret.statemgr")
	if err != nil {
		return nil, err
	}
	return b.loader(cfg).LoadStateManager(ctx, n, cfg)
}

func (b *backends) Uploader(ctx context.Context, cfg spi.Config) (spi.Uploader, error) {
	n, err := name(cfg, "egret.uploader")
	if err != nil {
		return nil, err
	}
	return b.loader(cfg).LoadUploader(ctx, n, cfg)
}

func (b *backends) Packing(ctx context.Context, cfg spi.Config) (spi.Packing, error) {
	n, err := name(cfg, "egret.packing")
	if err != nil {
		return nil, err
	}
	p, _, err := b.loader(cfg).LoadPacking(ctx, n, cfg) // the loader's Close ends it
	return p, err
}

func (b *backends) Scheduler(ctx context.Context, cfg spi.Config) (spi.Scheduler, error) {
	n, err := name(cfg, "egret.scheduler")
	if err != nil {
		return nil, err
	}
	return b.loader(cfg).LoadScheduler(ctx, n, cfg)
}

// CheckpointStorage implements launcher.CheckpointStorages.
func (b *backends) CheckpointStorage(ctx context.Context, cfg spi.Config) (spi.CheckpointStorage, error) {
	return b.loader(cfg).LoadCheckpointStorage(ctx, cfg.String("egret.checkpoint.storage", "localfs"), cfg)
}

// Close kills the plugins started by these backends.
func (b *backends) Close() {
	for _, l := range b.loaders {
		_ = l.Close()
	}
}
