package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/launcher"
)

func upgradeCmd(g *globals) *cobra.Command {
	var o launcher.UpgradeOptions
	var containers, output string
	cmd := &cobra.Command{
		Use:   "upgrade cluster[/role[/env]] <topology> [<new-binary-or-package> [-- args]] [--containers 1,3 | --canary N] [--wait-healthy 60s] [--drain-timeout D] | --rollback",
		Short: "Roll a running topology's containers onto new code one at a time (gray release), or back",
		Long: `Upgrade defines the new topology binary (a Go package is built first, as submit does), refuses
it unless its logical plan is compatible with the running one (same components and kinds,
streams and fields, subscriptions and groupings; the diff is printed, exit 2), uploads its
package and restarts the containers one at a time on it, waiting after each until it is
healthy (its stream manager registered, its instances report from new processes that do not
restart, move tuples again and report no exception storm) within --wait-healthy. Before each
restart a running topology is deactivated and drained (the tuples in flight are processed and
acked first, at most --drain-timeout, default egret.upgrade.drain.timeout, 30s; 0s: no drain)
and activated again once the container is back; a deactivated topology stays deactivated. A container
that is not healthy stops the upgrade. --containers restarts only the containers listed,
--canary N only the first N (a later plain upgrade with the same binary does the rest), and
--rollback returns every container to the package the latest upgrade replaced. Container 0
(the topology manager) runs no topology code and is never restarted. Arguments after -- go
to the topology binary in define mode (give those of the submission).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("upgrade needs a cluster, a topology and the new binary (or --rollback): egret upgrade local wordcount ./wordcount-v2")
			}
			if dash := cmd.ArgsLenAtDash(); dash >= 0 && dash < 3 {
				return usagef("upgrade: the arguments after -- go to the new binary, which comes before them: egret upgrade local wordcount ./wordcount-v2 -- args")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if len(args) > 2 {
				o.Binary, o.Args = args[2], args[3:]
			}
			if containers != "" {
				var err error
				if o.Containers, err = launcher.ParseContainers(containers); err != nil {
					return err
				}
			} else if cmd.Flags().Changed("containers") {
				return usagef("--containers is empty: give container ids such as 1,3")
			}
			if o.DefineTimeout <= 0 {
				return usagef("--define-timeout %s must be positive", o.DefineTimeout)
			}
			if o.WaitHealthy <= 0 {
				return usagef("--wait-healthy %s must be positive", o.WaitHealthy)
			}
			if o.DrainTimeout < 0 {
				return usagef("--drain-timeout %s is negative", o.DrainTimeout)
			}
			if err := o.Validate(); err != nil {
				return err
			}
			progress := cmd.OutOrStdout()
			if output == "json" {
				progress = cmd.ErrOrStderr() // stdout holds only the JSON
			}
			l, err := g.launcherWith(args[0], g.properties, g.logger(), progress)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("drain-timeout") {
				if o.DrainTimeout, err = l.Cluster.Duration("egret.upgrade.drain.timeout"); err != nil {
					return usageError{err}
				}
			}
			res, err := l.Upgrade(cmd.Context(), args[1], o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				return writeJSON(out, res)
			}
			verb := "upgraded"
			if o.Rollback {
				verb = "rolled back"
			}
			fmt.Fprintf(out, "%s topology %q: %d container(s) restarted; it runs %s\n", verb, args[1], len(res.Steps), launcher.PackagesSummary(res.Packages))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&containers, "containers", "", "restart only these containers, in this order: ids separated by commas (1,3)")
	f.IntVar(&o.Canary, "canary", 0, "upgrade only the first N containers and stop (a plain upgrade with the same binary does the rest)")
	f.BoolVar(&o.Rollback, "rollback", false, "return every container to the package the latest upgrade replaced")
	f.DurationVar(&o.WaitHealthy, "wait-healthy", launcher.DefaultWaitHealthy, "how long each restarted container may take to be healthy before the upgrade stops")
	f.DurationVar(&o.DrainTimeout, "drain-timeout", 0, "how long to drain the topology before each container restarts (default egret.upgrade.drain.timeout, 30s; 0: no drain)")
	f.IntVar(&o.MaxExceptions, "max-exceptions", launcher.DefaultMaxExceptions, "exceptions a restarted container may report before the upgrade stops (an exception storm)")
	f.DurationVar(&o.DefineTimeout, "define-timeout", launcher.DefaultDefineTimeout, "stop the new topology binary when it has not defined its topology after this long")
	f.StringVar(&o.Resources, "resources", "", "ship this directory in the new package as resources/ (give the submission's, for shell components)")
	f.StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}
