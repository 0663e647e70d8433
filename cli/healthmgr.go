package cli

import (
	"bytes"
	"context"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/healthmgr"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/launcher"
	"github.com/egret-stream/egret/proto/egretpb"
)

// healthmgrCmd runs a topology's health manager in container 0 (the
// executor starts it when topology.healthmgr.enabled is set).
func healthmgrCmd(g *globals) *cobra.Command {
	var name, id, metricsSocket string
	return daemonCommand(g, "healthmgr --topology T --topology-id ID --config F", "Run a topology's health manager (container 0)",
		func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.StringVar(&name, "topology", "", "topology name")
			f.StringVar(&id, "topology-id", "", "topology id")
			f.StringVar(&metricsSocket, "metrics-socket", "", "the metrics manager's Unix socket")
		},
		func(ctx context.Context, d *daemonEnv) error {
			if name == "" || id == "" {
				return usagef("healthmgr needs --topology and --topology-id")
			}
			sm, err := d.stateManager(ctx)
			if err != nil {
				return err
			}
			defer sm.Close()
			store := state.New(sm)
			es, err := store.ExecutionState(ctx, name)
			if err != nil {
				return err
			}
			// The same update path as egret update, with the resolved
			// cluster config the container holds.
			b := newBackends(d.log)
			d.g.closers = append(d.g.closers, b.Close)
			l := &launcher.Launcher{Cluster: conf.Resolved(d.cfg, es.GetCluster(), es.GetRole(), es.GetEnviron(), name),
				Backends: b, Log: d.log.Named("update"), Progress: logWriter{d.log.Named("update")}}
			m, err := healthmgr.New(healthmgr.Config{Topology: name, TopologyID: id, Store: store,
				Stats: &healthmgr.TManagerStats{Store: store, Topology: name}, Scaler: launcherScaler{l}}, d.log)
			if err != nil {
				return err
			}
			go wire.PublishMetrics(ctx, metricsSocket, d.duration("egret.metrics.export.interval", 10*time.Second), func() *egretpb.MetricsPublish {
				p := &egretpb.MetricsPublish{Source: "healthmgr", Container: 0, Metrics: wire.ProcessMetrics()}
				for k, v := range m.Counters() {
					p.Metrics = append(p.Metrics, &egretpb.Metric{Name: k, Value: v})
				}
				return p
			}, d.log)
			return m.Run(ctx)
		})
}

// launcherScaler scales through launcher.Launcher.Update.
type launcherScaler struct{ l *launcher.Launcher }

func (s launcherScaler) Scale(ctx context.Context, topology string, parallelism map[string]int) error {
	// Drained as egret update drains (egret.update.drain.timeout).
	drain, err := s.l.Cluster.Duration("egret.update.drain.timeout")
	if err != nil {
		s.l.Log.Warn("no drain before the rescale", zap.Error(err))
		drain = 0
	}
	return s.l.Update(ctx, topology, launcher.UpdateOptions{Parallelism: parallelism, DrainTimeout: drain})
}

// logWriter logs each line written to it (the launcher's progress).
type logWriter struct{ log *zap.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		w.log.Info(string(line))
	}
	return len(p), nil
}
