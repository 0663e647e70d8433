package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	_ "github.com/egret-stream/egret/catalog" // the built-in backends
	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/launcher"
	"github.com/egret-stream/egret/plugins"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// usageError marks errors caused by the command line or its inputs.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// globals are the persistent flags.
type globals struct {
	configPath string
	properties []string
	verbose    bool
	stdout     io.Writer
	stderr     io.Writer
	// closers run when the command ends (plugin processes).
	closers []func()
}

func (g *globals) logger() *zap.Logger {
	level := zapcore.WarnLevel
	if g.verbose {
		level = zapcore.DebugLevel
	}
	enc := zap.NewDevelopmentEncoderConfig()
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(g.stderr), level))
}

// loadCluster loads the config of a cluster[/role[/env]] argument.
func (g *globals) loadCluster(arg string) (*conf.Cluster, error) {
	return g.loadClusterWith(arg, g.properties)
}

// loadClusterWith is loadCluster with other config properties.
func (g *globals) loadClusterWith(arg string, props []string) (*conf.Cluster, error) {
	cluster, role, env, err := conf.ParseClusterRoleEnv(arg)
	if err != nil {
		return nil, usageError{err}
	}
	c, err := conf.Load(conf.LoadOptions{Cluster: cluster, Role: role, Environ: env, ConfigPath: g.configPath, Overrides: props,
		FindBackend: findBackend, PluginKeys: pluginKeys})
	if err != nil {
		return nil, usageError{err}
	}
	return c, nil
}

// findBackend checks that a backend a cluster config selects is built in
// or installed as a plugin binary in pluginDir, without starting it.
func findBackend(kind, name, pluginDir string) error {
	_, err := plugins.NewLoader(pluginDir, nil).Find(kind, name)
	return err
}

// pluginKeys asks an external plugin a cluster config selects for the
// config keys it declares (it is started and stopped for the question).
func pluginKeys(kind, name, pluginDir string) ([]spi.Key, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pluginKeysTimeout)
	defer cancel()
	return plugins.NewLoader(pluginDir, nil).Keys(ctx, kind, name)
}

// pluginKeysTimeout bounds a plugin's start and its answer.
const pluginKeysTimeout = 30 * time.Second

// outputLauncher checks an --output value, then loads the launcher of
// cluster: a read-only command's first two steps.
func (g *globals) outputLauncher(output, cluster string) (*launcher.Launcher, error) {
	if err := checkOutput(output); err != nil {
		return nil, err
	}
	return g.launcher(cluster, g.logger())
}

func (g *globals) launcher(arg string, log *zap.Logger) (*launcher.Launcher, error) {
	return g.launcherWith(arg, g.properties, log, g.stdout)
}

// launcherWith is launcher with other config properties and another
// progress writer (nil: none).
func (g *globals) launcherWith(arg string, props []string, log *zap.Logger, progress io.Writer) (*launcher.Launcher, error) {
	c, err := g.loadClusterWith(arg, props)
	if err != nil {
		return nil, err
	}
	b := newBackends(log)
	g.closers = append(g.closers, b.Close)
	return &launcher.Launcher{Cluster: c, Backends: b, Log: log, Progress: progress}, nil
}

func (g *globals) close() {
	for _, c := range g.closers {
		c()
	}
	g.closers = nil
}

// closeAfter makes every command release what it opened (plugin
// processes) when it returns, whether it failed or not.
func closeAfter(cmd *cobra.Command, g *globals) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			defer g.close()
			return run(c, args)
		}
	}
	for _, sub := range cmd.Commands() {
		closeAfter(sub, g)
	}
}

// NewRoot returns the egret command.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	g := &globals{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "egret",
		Short:         "Egret runs stream processing topologies on a laptop or a cluster",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       launcher.Version,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.configPath, "config-path", "", "directory of per-cluster config overrides (default ~/.egret/conf)")
	pf.StringArrayVar(&g.properties, "config-property", nil, "override a config key: key=value (repeatable)")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log debug details to stderr")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		submitCmd(g), killCmd(g), activateCmd(g, true), activateCmd(g, false), restartCmd(g),
		updateCmd(g), upgradeCmd(g), savepointCmd(g), savepointsCmd(g), applyCmd(g), listCmd(g), metricsCmd(g), logsCmd(g), loglevelCmd(g), trackerCmd(g), configCmd(g), servePackagesCmd(g), pluginCmd(g),
		imageCmd(), kubernetesCmd(),
	)
	addDaemonCmds(root, g)
	closeAfter(root, g)
	return root
}

// Main runs the egret command with args and returns the exit code.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, os.Stdout, os.Stderr)
}

// run runs the egret command with args, prints an error on stderr and
// returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "egret:", err)
	if hint := launcher.Hint(err); hint != "" {
		fmt.Fprintln(stderr, "hint:", hint)
	}
	var ue usageError
	if errors.As(err, &ue) || launcher.IsBadInput(err) || strings.HasPrefix(err.Error(), "unknown command") {
		return ExitUsage
	}
	return ExitFailure
}
