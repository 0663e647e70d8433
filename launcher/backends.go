package launcher

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
)

// Backends creates the SPI implementations a cluster config selects
// (egret.statemgr, egret.uploader, egret.packing, egret.scheduler). The
// plugin loader implements it; Builtins is the in-process version.
type Backends interface {
	StateManager(ctx context.Context, cfg spi.Config) (spi.StateManager, error)
	Uploader(ctx context.Context, cfg spi.Config) (spi.Uploader, error)
	Packing(ctx context.Context, cfg spi.Config) (spi.Packing, error)
	Scheduler(ctx context.Context, cfg spi.Config) (spi.Scheduler, error)
}

// Builtins creates only built-in backends.
type Builtins struct{ Log *zap.Logger }

func backendName(cfg spi.Config, key string) (string, error) {
	name := cfg.String(key, "")
	if name == "" {
		return "", fmt.Errorf("config key %s is not set", key)
	}
	return name, nil
}

// StateManager implements Backends.
func (b Builtins) StateManager(_ context.Context, cfg spi.Config) (spi.StateManager, error) {
	name, err := backendName(cfg, "egret.statemgr")
	if err != nil {
		return nil, err
	}
	f, err := spi.LookupStateManager(name)
	if err != nil {
		return nil, err
	}
	return f(cfg, b.Log.Named("statemgr"))
}

// Uploader implements Backends.
func (b Builtins) Uploader(_ context.Context, cfg spi.Config) (spi.Uploader, error) {
	name, err := backendName(cfg, "egret.uploader")
	if err != nil {
		return nil, err
	}
	f, err := spi.LookupUploader(name)
	if err != nil {
		return nil, err
	}
	return f(cfg, b.Log.Named("uploader"))
}

// Packing implements Backends.
func (b Builtins) Packing(_ context.Context, cfg spi.Config) (spi.Packing, error) {
	name, err := backendName(cfg, "egret.packing")
	if err != nil {
		return nil, err
	}
	f, err := spi.LookupPacking(name)
	if err != nil {
		return nil, err
	}
	return f(cfg)
}

// Scheduler implements Backends.
func (b Builtins) Scheduler(_ context.Context, cfg spi.Config) (spi.Scheduler, error) {
	name, err := backendName(cfg, "egret.scheduler")
	if err != nil {
		return nil, err
	}
	f, err := spi.LookupScheduler(name)
	if err != nil {
		return nil, err
	}
	return f(cfg, b.Log.Named("scheduler"))
}
