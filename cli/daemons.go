package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/ckptmgr"
	"github.com/egret-stream/egret/daemons/metricsmgr"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/internal/daemonlog"
	"github.com/egret-stream/egret/internal/hostaddr"
	"github.com/egret-stream/egret/internal/loglevel"
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/proto/egretpb"
)

// daemonEnv is what every daemon command reads: the resolved cluster
// config written into the topology package, and a logger.
type daemonEnv struct {
	configFile string
	cfg        spi.Config
	log        *zap.Logger
	// level is the logger's level, which live overrides change.
	level zap.AtomicLevel
	g     *globals
}

func (d *daemonEnv) load(name string) error {
	if d.configFile == "" {
		return usagef("%s needs --config", name)
	}
	cfg, err := spi.ReadConfigFile(d.configFile)
	if err != nil {
		return usageError{err}
	}
	d.cfg = cfg
	log, level := d.g.daemonLoggerLevel()
	d.log, d.level = log.Named(name), level
	return nil
}

// stateManager opens a state-manager session from the daemon's config.
func (d *daemonEnv) stateManager(ctx context.Context) (spi.StateManager, error) {
	b := newBackends(d.log)
	d.g.closers = append(d.g.closers, b.Close)
	return b.StateManager(ctx, d.cfg)
}

// publishProcessMetrics reports the daemon's process metrics (source
// source) to the container's metrics manager every export interval until
// ctx ends; an empty socket: none.
func (d *daemonEnv) publishProcessMetrics(ctx context.Context, socket, source string, container int) {
	wire.PublishMetrics(ctx, socket, d.duration("egret.metrics.export.interval", 10*time.Second), func() *egretpb.MetricsPublish {
		return &egretpb.MetricsPublish{Source: source, Container: int32(container), Metrics: wire.ProcessMetrics()}
	}, d.log)
}

func (d *daemonEnv) duration(key string, def time.Duration) time.Duration {
	v, err := d.cfg.Duration(key, def)
	if err != nil {
		d.log.Warn("bad config value; using the default", zap.String("key", key), zap.Error(err))
		return def
	}
	return v
}

func addDaemonCmds(root *cobra.Command, g *globals) {
	m := metricsmgrCmd(g)
	m.Hidden = true
	root.AddCommand(m)
	for _, c := range spi.Commands() {
		root.AddCommand(backendCmd(g, c))
	}
	addRuntimeCmds(root, g)
}

func daemonCommand(g *globals, use, short string, flags func(*cobra.Command), run func(ctx context.Context, d *daemonEnv) error) *cobra.Command {
	d := &daemonEnv{g: g}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(0, use),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := d.load(cmd.Name()); err != nil {
				return err
			}
			defer func() { _ = d.log.Sync() }()
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			// Live log levels (egret loglevel): a no-op unless the
			// executor named the container's override file.
			go loglevel.FromEnv(d.level, d.log).Run(ctx)
			return run(ctx, d)
		},
	}
	cmd.Flags().StringVar(&d.configFile, "config", "", "resolved cluster config (JSON) of the topology")
	flags(cmd)
	return cmd
}

func metricsmgrCmd(g *globals) *cobra.Command {
	var topology, socket, file string
	var container int
	return daemonCommand(g, "metricsmgr --topology T --container N --socket S --config F", "Run a container's metrics manager",
		func(c *cobra.Command) {
			f := c.Flags()
			f.StringVar(&topology, "topology", "", "topology name")
			f.IntVar(&container, "container", 0, "container index")
			f.StringVar(&socket, "socket", "", "Unix socket to listen on")
			f.StringVar(&file, "metrics-file", "", "file sink path (default: metrics.jsonl next to the socket's working directory)")
		},
		func(ctx context.Context, d *daemonEnv) error {
			if topology == "" || socket == "" {
				return usagef("metricsmgr needs --topology and --socket")
			}
			sinks, err := metricsmgr.SinksFromConfig(d.cfg)
			if err != nil {
				return usageError{err}
			}
			cfg := metricsmgr.Config{TopologyName: topology, Container: container, Socket: socket, Sinks: sinks, FilePath: file,
				GraphiteAddr:   d.cfg.String(metricsmgr.KeyGraphiteAddress, ""),
				GraphitePrefix: d.cfg.String(metricsmgr.KeyGraphitePrefix, "egret"),
				ReportInterval: d.duration("egret.metrics.export.interval", 10*time.Second),
			}
			maxSize, err := d.cfg.Size(metricsmgr.KeyFileMaxSize, 64<<20, math.MaxInt)
			if err != nil {
				return usageError{err}
			}
			cfg.FileMaxBytes = int64(maxSize)
			if cfg.FileMaxFiles, err = d.cfg.Int(metricsmgr.KeyFileMaxFiles, 1); err != nil {
				return usageError{err}
			}
			if slices.ContainsFunc(sinks, func(s string) bool { return !slices.Contains(metricsmgr.Sinks, s) }) {
				// External sinks run as plugin binaries of the plugin
				// directory on this node; the loader stops them on exit.
				loader := plugins.NewLoader(d.cfg.String("egret.plugin.directory", ""), d.log.Named("plugins"))
				defer loader.Close()
				for _, s := range sinks {
					if slices.Contains(metricsmgr.Sinks, s) {
						continue
					}
					if _, err := loader.Find(spi.KindMetricsSink, s); err != nil {
						return usageError{fmt.Errorf("config key %s: %w", metricsmgr.KeySinks, err)}
					}
				}
				cfg.SinkLoader, cfg.SinkConfig = loader, d.cfg
			}
			if slices.Contains(sinks, metricsmgr.SinkPrometheus) {
				// A port the resource manager assigned wins over the
				// config's; the targets file goes next to the metrics
				// file, in the container's working directory.
				port := hostaddr.EnvPort("EGRET_PORT_METRICS")
				if port == 0 {
					if port, err = d.cfg.Int(metricsmgr.KeyPrometheusPort, 0); err != nil {
						return usageError{err}
					}
				}
				cfg.PrometheusAddr = net.JoinHostPort(hostaddr.Bind(), strconv.Itoa(port))
			}
			if slices.Contains(sinks, metricsmgr.SinkTManager) {
				sm, err := d.stateManager(ctx)
				if err != nil {
					return err
				}
				defer sm.Close()
				cfg.StateManager = sm
			}
			if cfg.FilePath == "" {
				wd, _ := os.Getwd()
				cfg.FilePath = filepath.Join(wd, "metrics.jsonl")
			}
			if cfg.PrometheusAddr != "" {
				cfg.PrometheusTargetsFile = metricsmgr.TargetsFile(filepath.Dir(cfg.FilePath))
			}
			return metricsmgr.Run(ctx, cfg, d.log)
		})
}

func ckptmgrCmd(g *globals) *cobra.Command {
	var topology, socket, metricsSocket string
	var container int
	return daemonCommand(g, "ckptmgr --topology T --container N --socket S --config F [--metrics-socket M]", "Run a container's checkpoint manager (effectively-once)",
		func(c *cobra.Command) {
			f := c.Flags()
			f.StringVar(&topology, "topology", "", "topology name")
			f.IntVar(&container, "container", 0, "container index")
			f.StringVar(&socket, "socket", "", "Unix socket to listen on for the stream manager")
			f.StringVar(&metricsSocket, "metrics-socket", "", "the container's metrics manager socket (empty: no metrics)")
		},
		func(ctx context.Context, d *daemonEnv) error {
			if topology == "" || container < 1 || socket == "" {
				return usagef("ckptmgr needs --topology, --container (1 or more) and --socket")
			}
			maxFrame, err := d.cfg.Size(ckptmgr.KeyMaxFrame, ckptmgr.DefaultMaxFrame, math.MaxInt32-1<<10)
			if err != nil {
				return usageError{err}
			}
			timeout, err := d.cfg.Duration(ckptmgr.KeyTimeout, ckptmgr.DefaultTimeout)
			if err != nil {
				return usageError{err}
			}
			// A storage that is not built in is a plugin binary of the
			// plugin directory on this node; the loader stops it on exit.
			loader := plugins.NewLoader(d.cfg.String("egret.plugin.directory", ""), d.log.Named("plugins"))
			defer loader.Close()
			name := d.cfg.String(ckptmgr.KeyStorage, ckptmgr.DefaultStorage)
			st, err := loader.LoadCheckpointStorage(ctx, name, d.cfg)
			if err != nil {
				if errors.Is(err, spi.ErrUnknownBackend) {
					return usageError{fmt.Errorf("config key %s: %w", ckptmgr.KeyStorage, err)}
				}
				return fmt.Errorf("checkpoint storage %q: %w", name, err)
			}
			defer func() {
				if err := st.Close(); err != nil {
					d.log.Warn("closing the checkpoint storage", zap.Error(err))
				}
			}()
			d.log.Info("checkpoint storage opened", zap.String("storage", name))
			return ckptmgr.Run(ctx, ckptmgr.Config{
				TopologyName: topology, Container: container, Socket: socket, Storage: st,
				MaxFrame: maxFrame, Timeout: timeout,
				MetricsSocket: metricsSocket, MetricsInterval: d.duration("egret.metrics.export.interval", 10*time.Second),
			}, d.log)
		})
}

func (g *globals) daemonLogger() *zap.Logger {
	log, _ := g.daemonLoggerLevel()
	return log
}

// daemonLoggerLevel builds a daemon's logger and returns its level.
func (g *globals) daemonLoggerLevel() (*zap.Logger, zap.AtomicLevel) {
	level := zap.NewAtomicLevelAt(zap.InfoLevel)
	if g.verbose {
		level.SetLevel(zap.DebugLevel)
	}
	return daemonlog.New(os.Stderr, level), level
}
