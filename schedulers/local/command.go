package local

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Command is the hidden egret subcommand that runs the service of one
// topology; Launch starts it detached:
//
//	egret scheduler --work-dir W --config W/cluster.json
const Command = "scheduler"

func init() {
	spi.RegisterScheduler("local", New,
		spi.Key{Name: keyEgretBinary, Type: spi.KeyString,
			Doc: "The egret binary the local scheduler service and executors run; empty: the egret running the command."})
	spi.RegisterCommand(spi.Command{Name: Command, Args: "--work-dir W --config F", Short: "Run the local scheduler service of one topology", Run: runCommand})
}

// runCommand runs the service of the topology in --work-dir with the
// resolved cluster config --config, publishing its location in the state
// manager (an ephemeral node: it vanishes with the service).
func runCommand(ctx context.Context, args []string, env spi.CommandEnv) error {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	workDir := fs.String("work-dir", "", "the topology's working directory")
	configFile := fs.String("config", "", "the resolved cluster config (JSON) of the topology")
	if err := fs.Parse(args); err != nil {
		return spi.Usage(fmt.Errorf("%s: %w", Command, err))
	}
	if *workDir == "" || *configFile == "" || fs.NArg() > 0 {
		return spi.Usage(errors.New("usage: egret scheduler --work-dir W --config F"))
	}
	cfg, err := spi.ReadConfigFile(*configFile)
	if err != nil {
		return spi.Usage(err)
	}
	sm, err := env.StateManager(ctx, cfg)
	if err != nil {
		return err
	}
	defer sm.Close()
	log := env.Log.Named(Command)
	duration := func(key string, def time.Duration) time.Duration {
		d, err := cfg.Duration(key, def)
		if err != nil {
			log.Warn("bad config value; using the default", zap.String("key", key), zap.Error(err))
			return def
		}
		return d
	}
	return Serve(ctx, ServeConfig{
		WorkDir: *workDir,
		Ready: func(topology, url string) {
			loc := &egretpb.SchedulerLocation{TopologyName: topology, HttpEndpoint: url, JobLinks: []string{"file://" + *workDir}, Pid: int32(os.Getpid())}
			if err := state.New(sm).SetSchedulerLocation(ctx, loc, true); err != nil {
				log.Warn("could not publish the scheduler location", zap.Error(err))
			}
		},
		EgretBinary:    cfg.String(keyEgretBinary, ""),
		BackoffInitial: duration("egret.executor.restart.backoff.initial", time.Second),
		BackoffMax:     duration("egret.executor.restart.backoff.max", time.Minute),
		StopGrace:      duration("egret.executor.stop.grace", 10*time.Second),
	}, log)
}
