// Command egret-scheduler-broken is a scheduler plugin that breaks the
// scheduler contract on purpose, for the tests of `egret plugin verify`.
// It is the example scheduler (with its observer) changed by the name it is
// installed under:
//
//	egret-scheduler-broken   Kill is not idempotent: killing a topology
//	                         that does not run fails
//	egret-scheduler-crashy   the process exits in the middle of Restart
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/cmd/egret-scheduler-example/example"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
)

type broken struct {
	spi.Scheduler
	file  string
	crash bool
}

func (b broken) Kill(ctx context.Context, topology string) error {
	if !b.crash {
		running, err := example.Containers(b.file, topology)
		if err != nil {
			return err
		}
		if len(running) == 0 {
			return fmt.Errorf("kill %s: the topology is not running", topology)
		}
	}
	return b.Scheduler.Kill(ctx, topology)
}

func (b broken) Restart(ctx context.Context, topology string, container int) error {
	if b.crash {
		fmt.Fprintln(os.Stderr, "egret-scheduler-crashy: crashing in Restart")
		os.Exit(7)
	}
	return b.Scheduler.Restart(ctx, topology, container)
}

func main() {
	crash := filepath.Base(os.Args[0]) == "egret-scheduler-crashy"
	plugins.ServeScheduler(func(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
		s, err := example.New(cfg, log)
		if err != nil {
			return nil, err
		}
		return broken{Scheduler: s, file: cfg.String(example.KeyStateFile, ""), crash: crash}, nil
	}, plugins.WithObserver(func(cfg spi.Config, _ *zap.Logger) (plugins.Observer, error) {
		return example.NewObserver(cfg)
	}))
}
