package cli

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/plugins/verify"
)

// errChecksFailed is the error of a verification whose checks failed; the
// report already said which.
var errChecksFailed = errors.New("plugin verify: some checks failed (see the FAIL lines above)")

func pluginCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "plugin", Short: "Work with external plugin binaries"}
	var (
		o          verify.Options
		configFile string
	)
	v := &cobra.Command{
		Use:   "verify <plugin-binary | main-package-dir> [--config FILE] [--config-property k=v ...] [--kind K]",
		Short: "Run the conformance suite of its kind against an external plugin binary",
		Long: `Loads an external plugin binary (scheduler, uploader, statemgr or packing) over
the plugin protocol, as egret does, and runs the conformance suite the built-in
backends pass against the target its config names (--config FILE, a YAML file
of keys, and --config-property key=value, later winning). A directory is built
with go build first. Prints PASS, FAIL or SKIP with a reason for each check and
a summary line.

Exit status: 0 when every check passed or was skipped, 1 when a check failed
(or the plugin crashed), 2 for bad input: a missing binary, a file that is not
an Egret plugin, an unknown kind, a config the plugin rejects.`,
		Args: exactArgs(1, "egret plugin verify ./egret-scheduler-mine --config-property egret.scheduler.mine.address=http://127.0.0.1:4646"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := conf.ReadProperties(configFile, g.properties)
			if err != nil {
				return usageError{err}
			}
			o.Path, o.Config, o.Out, o.Verbose = args[0], cfg, cmd.OutOrStdout(), g.verbose
			if g.verbose {
				// The plugin's own log says why it failed; without -v it
				// would drown the report.
				o.Log = g.logger()
			}
			rep, err := verify.Run(cmd.Context(), o)
			switch {
			case errors.Is(err, verify.ErrBadInput):
				return usageError{err}
			case err != nil:
				return err
			case !rep.OK():
				return errChecksFailed
			}
			return nil
		},
	}
	f := v.Flags()
	f.StringVar(&configFile, "config", "", "YAML file of the plugin's config keys (--config-property overrides them)")
	f.StringVar(&o.Kind, "kind", "", "plugin kind: scheduler, uploader, statemgr, packing, metricssink or checkpointstorage (default: from the binary name egret-<kind>-<name>)")
	f.StringVar(&o.Name, "name", "", "backend name passed to the plugin (default: from the binary name)")
	f.DurationVar(&o.StartTimeout, "start-timeout", 30*time.Second, "bound on the plugin's start, handshake and configuration")
	f.DurationVar(&o.CheckTimeout, "check-timeout", 5*time.Minute, "bound on each check; a check that runs longer fails and ends the run")
	f.DurationVar(&o.OpTimeout, "op-timeout", 30*time.Second, "scheduler suite: bound on each operation and each wait for containers")
	f.StringVar(&o.FetchToken, "fetch-token", "", "uploader suite: bearer token for fetching uploaded packages back over http(s), as executors do")
	cmd.AddCommand(v)
	return cmd
}
