package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/daemons/executor"
	"github.com/egret-stream/egret/daemons/stmgr"
	"github.com/egret-stream/egret/daemons/tmanager"
	"github.com/egret-stream/egret/internal/hostaddr"
)

// addRuntimeCmds adds the container daemons (executor, tmanager, stmgr, shell, ckptmgr, healthmgr).
func addRuntimeCmds(root *cobra.Command, g *globals) {
	for _, c := range []*cobra.Command{executorCmd(g), tmanagerCmd(g), stmgrCmd(g), shellCmd(g), ckptmgrCmd(g), healthmgrCmd(g)} {
		c.Hidden = true
		root.AddCommand(c)
	}
}

func tmanagerCmd(g *globals) *cobra.Command {
	var c tmanager.Config
	var metricsSocket string
	return daemonCommand(g, "tmanager --topology T --topology-id ID --config F", "Run a topology's topology manager (container 0)",
		func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.StringVar(&c.TopologyName, "topology", "", "topology name")
			f.StringVar(&c.TopologyID, "topology-id", "", "topology id")
			f.StringVar(&c.Host, "host", "", "address to advertise (default: $EGRET_HOST, the host name, or 127.0.0.1)")
			f.StringVar(&c.BindHost, "bind", hostaddr.Bind(), "interface to listen on (default: $EGRET_BIND_HOST, else all)")
			f.IntVar(&c.ServerPort, "server-port", hostaddr.EnvPort("EGRET_PORT_TMANAGER"), "port for stream and metrics managers (default: $EGRET_PORT_TMANAGER, else any)")
			f.IntVar(&c.HTTPPort, "http-port", hostaddr.EnvPort("EGRET_PORT_TMANAGER_HTTP"), "port of the control and stats API (default: $EGRET_PORT_TMANAGER_HTTP, else any)")
			f.StringVar(&metricsSocket, "metrics-socket", "", "the metrics manager's Unix socket, for the process metrics")
		},
		func(ctx context.Context, d *daemonEnv) error {
			if c.TopologyName == "" || c.TopologyID == "" {
				return usagef("tmanager needs --topology and --topology-id")
			}
			if c.Host == "" {
				c.Host = hostaddr.Advertised()
			}
			sm, err := d.stateManager(ctx)
			if err != nil {
				return err
			}
			defer sm.Close()
			c.StateManager, c.Settings = sm, d.cfg
			c.MetricsSocket, c.MetricsInterval = metricsSocket, d.duration("egret.metrics.export.interval", 10*time.Second)
			go d.publishProcessMetrics(ctx, metricsSocket, "tmanager", 0)
			return tmanager.Run(ctx, c, d.log)
		})
}

func executorCmd(g *globals) *cobra.Command {
	var c executor.Config
	cmd := &cobra.Command{
		Use:   "executor --topology T --topology-id ID --container N --work-dir W --package-uri U [--package-sha256 H] [--config-file F]",
		Short: "Run one container of a topology: fetch its package, start and supervise its processes",
		Args:  exactArgs(0, "egret executor --topology wordcount --container 1 ..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.TopologyName == "" || c.WorkDir == "" {
				return usagef("executor needs --topology and --work-dir")
			}
			log := g.daemonLogger().Named("executor")
			defer func() { _ = log.Sync() }()
			b := newBackends(log)
			defer b.Close()
			c.Connect = b.StateManager
			return executor.Run(cmd.Context(), c, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.TopologyName, "topology", "", "topology name")
	f.StringVar(&c.TopologyID, "topology-id", "", "topology id")
	f.IntVar(&c.Container, "container", 0, "container index (0 runs the topology manager)")
	f.StringVar(&c.WorkDir, "work-dir", "", "the container's working directory")
	f.StringVar(&c.PackageURI, "package-uri", "", "where to fetch the topology package")
	f.StringVar(&c.PackageSHA256, "package-sha256", "", "expected SHA-256 of the package")
	f.StringVar(&c.ConfigFile, "config-file", "", "resolved cluster config (default: cluster.json in the package)")
	f.StringVar(&c.EgretBinary, "egret-binary", "", "egret binary for the daemons (default: this one)")
	f.IntVar(&c.StmgrPort, "stmgr-port", 0, "TCP port of the stream manager (0: any)")
	return cmd
}

func stmgrCmd(g *globals) *cobra.Command {
	var c stmgr.Config
	return daemonCommand(g, "stmgr --topology T --topology-id ID --container N --socket S --config F", "Run a container's stream manager",
		func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.StringVar(&c.TopologyName, "topology", "", "topology name")
			f.StringVar(&c.TopologyID, "topology-id", "", "topology id")
			f.IntVar(&c.Container, "container", 0, "container index (1..N)")
			f.StringVar(&c.Socket, "socket", "", "Unix socket for the container's instances")
			f.IntVar(&c.Port, "port", 0, "TCP port for peer stream managers (0: any)")
			f.StringVar(&c.BindHost, "bind", hostaddr.Bind(), "interface the TCP port listens on (default: $EGRET_BIND_HOST, else all)")
			f.StringVar(&c.Host, "host", "", "address to advertise (default: $EGRET_HOST, the host name, or 127.0.0.1)")
			f.StringVar(&c.MetricsSocket, "metrics-socket", "", "the metrics manager's Unix socket")
			f.StringVar(&c.CkptMgrSocket, "ckptmgr-socket", "", "the checkpoint manager's Unix socket (effectively-once topologies)")
		},
		func(ctx context.Context, d *daemonEnv) error {
			if c.TopologyName == "" || c.TopologyID == "" || c.Container < 1 || c.Socket == "" {
				return usagef("stmgr needs --topology, --topology-id, --container (1 or more) and --socket")
			}
			if c.Host == "" {
				c.Host = hostaddr.Advertised()
			}
			sm, err := d.stateManager(ctx)
			if err != nil {
				return err
			}
			defer sm.Close()
			c.StateManager, c.Settings = sm, d.cfg
			return stmgr.Run(ctx, c, d.log)
		})
}
