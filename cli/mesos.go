package cli

import (
	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/schedulers/mesos"
)

// mesosFrameworkCmd runs a topology's Mesos framework service, which the
// Mesos scheduler's Launch starts detached.
func mesosFrameworkCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:                mesos.FrameworkCommand + " --work-dir W",
		Short:              "Run the Mesos framework of one topology",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := mesos.ParseFrameworkArgs(args)
			if err != nil {
				return usageError{err}
			}
			log := g.daemonLogger()
			defer func() { _ = log.Sync() }()
			return mesos.Serve(cmd.Context(), mesos.ServeConfig{WorkDir: dir}, log)
		},
	}
}
