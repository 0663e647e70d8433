package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/core/spi"
)

// backendCmd is the hidden command a service-mode backend registered
// (spi.RegisterCommand): the Mesos scheduler's framework service and the
// local scheduler's service, which their Launch starts detached.
func backendCmd(g *globals, c spi.Command) *cobra.Command {
	return &cobra.Command{
		Use:                c.Name + " " + c.Args,
		Short:              c.Short,
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			log := g.daemonLogger()
			defer func() { _ = log.Sync() }()
			b := newBackends(log)
			defer b.Close()
			if err := c.Run(cmd.Context(), args, spi.CommandEnv{Log: log, StateManager: b.StateManager}); err != nil {
				if errors.Is(err, spi.ErrUsage) {
					return usageError{err}
				}
				return err
			}
			return nil
		},
	}
}
