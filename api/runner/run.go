package runner

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topobin"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/instance"
	"github.com/egret-stream/egret/daemons/instance/gateway"
	"github.com/egret-stream/egret/daemons/instance/inproc"
	"github.com/egret-stream/egret/internal/daemonlog"
	"github.com/egret-stream/egret/internal/loglevel"
)

// Exit codes of a topology binary (the contract is core/topobin's).
const (
	ExitOK      = topobin.ExitOK
	ExitFailure = topobin.ExitFailure // invalid topology or runtime failure
	ExitUsage   = topobin.ExitUsage   // bad command line
	// ExitPlanChanged: in instance mode, a new physical plan changed the
	// task layout; the executor restarts the instance with the new plan.
	ExitPlanChanged = topobin.ExitPlanChanged
)

// Main runs the topology as the command line asks and exits the process.
// Arguments the topology's own main consumed must be removed from os.Args
// first; use MainArgs to pass them explicitly.
func Main(b *api.TopologyBuilder) {
	os.Exit(MainArgs(b, os.Args[1:], os.Stdout, os.Stderr))
}

// MainArgs is Main with explicit arguments and output; it returns the
// exit code.
func MainArgs(b *api.TopologyBuilder, args []string, stdout, stderr io.Writer) int {
	if out := os.Getenv(topobin.DefineEnv); out != "" {
		// egret submit: define the topology. The arguments after -- were
		// the topology's own, which its main took out (SplitArgs): any
		// left is one it does not know.
		if err := checkDefineArgs(b.Name(), args); err != nil {
			fmt.Fprintln(stderr, err)
			return ExitUsage
		}
		t, err := b.Build()
		if err != nil {
			fmt.Fprintln(stderr, err)
			return ExitFailure
		}
		return writeDefinition(t, out, stderr)
	}
	fs := flag.NewFlagSet(b.Name(), flag.ContinueOnError)
	fs.SetOutput(stderr)
	local := fs.Bool("local", false, "run the whole topology in this process")
	duration := fs.Duration("duration", 0, "with --local: stop after this long (0: run until interrupted)")
	define := fs.String("define", "", "write the topology definition to this file and exit")
	deactivated := fs.Bool("deactivated", false, "with --local: start with the spouts deactivated")
	drainTimeout := fs.Duration("drain-timeout", defaultLocalDrainTimeout, "with --local: at the end of the run, wait at most this long for the in-flight tuples, the final ticks and the pending roots (0: stop at once; a second Ctrl-C stops at once)")
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error (instance mode: info unless set)")
	resources := fs.String("resources", "", "with --local: the directory of the files shell components run in (default ./resources if it exists, else the current directory)")
	var inst instanceFlags
	inst.register(fs)
	var cont containerFlags
	cont.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s is an Egret topology binary.\n\nUsage:\n  %s --local [--duration 30s]   run in this process\n  egret submit <cluster> %s     run on a cluster\n  (the executor of a container runs it with --instance)\n\nFlags:\n", b.Name(), os.Args[0], os.Args[0])
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments %q: parse your topology's own arguments before calling runner.Main and pass the rest to runner.MainArgs\n", fs.Args())
		return ExitUsage
	}
	var level zapcore.Level
	if (inst.enabled || cont.enabled) && !flagSet(fs, "log-level") {
		*logLevel = "info"
	}
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "--log-level: %v\n", err)
		return ExitUsage
	}
	var tasks []int
	if cont.enabled {
		if inst.enabled || *local || *define != "" {
			fmt.Fprintln(stderr, "--container-process cannot be combined with --instance, --local or --define")
			return ExitUsage
		}
		var err error
		if tasks, err = cont.check(&inst); err != nil {
			fmt.Fprintf(stderr, "--container-process: %v\n", err)
			return ExitUsage
		}
	}
	if inst.enabled {
		if *local || *define != "" {
			fmt.Fprintln(stderr, "--instance cannot be combined with --local or --define")
			return ExitUsage
		}
		if err := inst.check(); err != nil {
			fmt.Fprintf(stderr, "--instance: %v\n", err)
			return ExitUsage
		}
	}
	t, err := b.Build()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitFailure
	}
	switch {
	case inst.enabled || cont.enabled:
		atom := zap.NewAtomicLevelAt(level)
		// The daemons' format (internal/daemonlog): one JSON object a
		// line in every log file of a container.
		log := daemonlog.New(stderr, atom)
		defer func() { _ = log.Sync() }()
		// Live log levels (egret loglevel, internal/loglevel).
		wctx, stopWatch := context.WithCancel(context.Background())
		defer stopWatch()
		go loglevel.FromEnv(atom, log).Run(wctx)
		if cont.enabled {
			return runContainer(t, &inst, &cont, tasks, log, stderr)
		}
		return runInstance(t, &inst, log, stderr)
	case *define != "":
		return writeDefinition(t, *define, stderr)
	case *local:
		log := newLogger(stderr, level)
		defer func() { _ = log.Sync() }()
		dir, err := localResources(*resources)
		if err != nil {
			fmt.Fprintf(stderr, "--resources: %v\n", err)
			return ExitUsage
		}
		if *drainTimeout < 0 {
			fmt.Fprintf(stderr, "--drain-timeout %s: must not be negative\n", *drainTimeout)
			return ExitUsage
		}
		return runLocal(t, localRun{duration: *duration, drainTimeout: *drainTimeout, deactivated: *deactivated, resources: dir}, log, stdout, stderr)
	default:
		fs.Usage()
		return ExitUsage
	}
}

// InContainer reports whether args (what the topology's main passes to
// MainArgs) run the binary in a container, as an instance (--instance) or
// as a process-per-container container (--container-process): the
// topology then comes from the submitted definition, so a main may skip
// the checks of its own options that only submission needs.
func InContainer(args []string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		switch strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-") {
		case "instance", "container-process":
			return true
		}
	}
	return false
}

// checkDefineArgs refuses the arguments left over in define mode: flags
// the topology does not define, and positional arguments.
func checkDefineArgs(topology string, args []string) error {
	if len(args) == 0 {
		return nil
	}
	a := args[0]
	if name := strings.TrimLeft(a, "-"); name != a && name != "" {
		name, _, _ = strings.Cut(name, "=")
		return fmt.Errorf("topology %s has no flag -%s (it takes only its own flags after --)", topology, name)
	}
	return fmt.Errorf("topology %s takes no argument %q (it takes only its own flags after --)", topology, a)
}

func newLogger(w io.Writer, level zapcore.Level) *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(w), level)
	return zap.New(core)
}

func writeDefinition(t *api.Topology, path string, stderr io.Writer) int {
	data, err := topology.Marshal(t.Logical)
	if err == nil {
		tmp := path + ".tmp"
		if err = os.WriteFile(tmp, data, 0o644); err == nil {
			err = os.Rename(tmp, path)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "write topology definition: %v\n", err)
		return ExitFailure
	}
	return ExitOK
}

// localResources resolves --resources of local mode.
func localResources(flagValue string) (string, error) {
	dir := flagValue
	if dir == "" {
		dir = "."
		if fi, err := os.Stat(topobin.ResourcesDirName); err == nil && fi.IsDir() {
			dir = topobin.ResourcesDirName
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return filepath.Abs(dir)
}

// packageResources is the resources directory of an instance: the
// package's resources/ beside the topology binary, or the package
// directory itself when the topology ships none.
func packageResources() string {
	exe, err := os.Executable()
	if err != nil {
		dir, _ := os.Getwd()
		return dir
	}
	pkg := filepath.Dir(exe)
	if fi, err := os.Stat(filepath.Join(pkg, topobin.ResourcesDirName)); err == nil && fi.IsDir() {
		return filepath.Join(pkg, topobin.ResourcesDirName)
	}
	return pkg
}

// defaultLocalDrainTimeout is the default of --drain-timeout in local mode.
const defaultLocalDrainTimeout = 30 * time.Second

// localRun are the settings of a local run.
type localRun struct {
	duration     time.Duration
	drainTimeout time.Duration // 0: no drain
	deactivated  bool
	resources    string
}

// runLocal runs t in this process until the duration passes or a first
// SIGINT/SIGTERM, then drains (a second signal ends the drain at once).
func runLocal(t *api.Topology, lr localRun, log *zap.Logger, stdout, stderr io.Writer) int {
	abort := make(chan struct{})
	r, err := inproc.New(t, inproc.Options{
		Logger:       log,
		Deactivated:  lr.deactivated,
		ResourcesDir: lr.resources,
		DrainTimeout: lr.drainTimeout,
		NoDrain:      lr.drainTimeout == 0,
		Abort:        abort,
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitFailure
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var end <-chan time.Time
	if lr.duration > 0 {
		timer := time.NewTimer(lr.duration)
		defer timer.Stop()
		end = timer.C
	}
	fmt.Fprintf(stdout, "running topology %q in this process (%d tasks)", t.Logical.Name, len(r.Layout().ComponentOf))
	if lr.duration > 0 {
		fmt.Fprintf(stdout, " for %s", lr.duration)
	}
	fmt.Fprintln(stdout, "; Ctrl-C stops it")
	// The watcher ends the run at the first signal or at the end of the
	// duration, and the drain at a second signal.
	finished := make(chan struct{}) // Run returned
	watched := make(chan struct{})  // the watcher returned
	go func() {
		defer close(watched)
		select {
		case <-sigs:
		case <-end:
		case <-finished:
			return // the run ended by itself (a task failed)
		}
		if lr.drainTimeout > 0 {
			fmt.Fprintf(stdout, "stopping: draining for at most %s (Ctrl-C again stops at once)\n", lr.drainTimeout)
		}
		stop()
		select {
		case <-sigs:
			close(abort)
		case <-finished:
		}
	}()
	s, err := r.Run(ctx)
	close(finished)
	<-watched // so that it does not write to stdout with the summary
	PrintSummary(stdout, s)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitFailure
	}
	return ExitOK
}

// PrintSummary writes a run's metrics as a table.
func PrintSummary(w io.Writer, s *inproc.Summary) {
	secs := s.Elapsed.Seconds()
	fmt.Fprintf(w, "\ntopology %q ran %.1fs\n", s.Topology, secs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "component\tkind\ttasks\temitted\temitted/s\texecuted\texecuted/s\tavg execute\terrors\tdropped\t")
	for _, c := range s.Components {
		avg := "-"
		if c.Executed > 0 {
			avg = (time.Duration(c.ExecuteNanos / c.Executed)).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f\t%d\t%.0f\t%s\t%d\t%d\t\n",
			c.Name, c.Kind, c.Tasks, c.Emitted, float64(c.Emitted)/secs, c.Executed, float64(c.Executed)/secs, avg, c.Errors, c.Dropped)
	}
	_ = tw.Flush()
	var lines []string
	for _, c := range s.Components {
		for k, v := range c.Counters {
			lines = append(lines, fmt.Sprintf("  %s.%s = %d", c.Name, k, v))
		}
	}
	if len(lines) > 0 {
		sort.Strings(lines)
		fmt.Fprintf(w, "user counters:\n%s\n", strings.Join(lines, "\n"))
	}
	fmt.Fprintln(w, drainLine(s))
}

// drainLine says in one line what the drain at the end of a run did, and
// what was still pending when it did not complete.
func drainLine(s *inproc.Summary) string {
	d := s.Drain
	var b strings.Builder
	switch d.Outcome {
	case inproc.DrainCompleted:
		fmt.Fprintf(&b, "drained in %s: nothing in flight, no pending root", d.Elapsed.Round(time.Millisecond))
		if d.FinalTicks > 0 {
			fmt.Fprintf(&b, ", %d final ticks executed (%s)", d.FinalTicks, strings.Join(d.Ticked, ", "))
		}
		return b.String()
	case inproc.DrainSkipped:
		b.WriteString("not drained (--drain-timeout 0s)")
	case inproc.DrainAborted:
		fmt.Fprintf(&b, "drain stopped by a second signal after %s, waiting for %s", d.Elapsed.Round(time.Millisecond), d.Waiting)
	default:
		fmt.Fprintf(&b, "drain timed out after %s, waiting for %s", d.Elapsed.Round(time.Millisecond), d.Waiting)
	}
	fmt.Fprintf(&b, ": %d batches in flight, %d roots pending", s.Undrained, s.PendingRoots)
	if len(d.Unticked) > 0 {
		fmt.Fprintf(&b, ", no final tick for %s", strings.Join(d.Unticked, ", "))
	}
	return b.String()
}

// SplitArgs separates a topology's own flags (those defined in fs) from
// the rest, so that a topology main can accept its flags together with
// Egret's:
//
//	own, rest := runner.SplitArgs(os.Args[1:], fs)
//	fs.Parse(own)
//	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
func SplitArgs(args []string, fs *flag.FlagSet) (own, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		if name == a || name == "" {
			rest = append(rest, a)
			continue
		}
		name, _, hasValue := strings.Cut(name, "=")
		f := fs.Lookup(name)
		if f == nil {
			rest = append(rest, a)
			continue
		}
		own = append(own, a)
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && !(ok && bf.IsBoolFlag()) && i+1 < len(args) {
			i++
			own = append(own, args[i])
		}
	}
	return own, rest
}

// instanceFlags are the flags of instance mode, with which a container's
// executor runs one task of the topology.
type instanceFlags struct {
	enabled       bool
	task          int
	container     int
	topologyID    string
	stmgrSocket   string
	metricsSocket string
	configFile    string
	ckptmgrSocket string
}

func (f *instanceFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.enabled, "instance", false, "run one task as an instance process of a container (used by the executor)")
	fs.IntVar(&f.task, "task", -1, "with --instance: the task id to run")
	fs.IntVar(&f.container, "container", 0, "with --instance or --container-process: the container id")
	fs.StringVar(&f.topologyID, "topology-id", "", "with --instance or --container-process: the topology id")
	fs.StringVar(&f.stmgrSocket, "stmgr-socket", "", "with --instance or --container-process: the stream manager's Unix socket")
	fs.StringVar(&f.metricsSocket, "metrics-socket", "", "with --instance or --container-process: the metrics manager's Unix socket (optional)")
	fs.StringVar(&f.configFile, "config", "", "with --instance or --container-process: cluster config as a JSON object of strings (optional; egret.instance.*, egret.wire.*, egret.metrics.* keys)")
	fs.StringVar(&f.ckptmgrSocket, "ckptmgr-socket", "", "with --instance or --container-process: the checkpoint manager's Unix socket (effectively-once: the instance streams its checkpoints there)")
}

func (f *instanceFlags) check() error {
	var errs []error
	if f.task < 0 {
		errs = append(errs, errors.New("--task is required"))
	}
	return errors.Join(append(errs, f.checkShared()...)...)
}

// checkShared checks the flags --instance and --container-process share.
func (f *instanceFlags) checkShared() []error {
	var errs []error
	if f.container < 1 {
		errs = append(errs, errors.New("--container is required (1 or more)"))
	}
	if f.topologyID == "" {
		errs = append(errs, errors.New("--topology-id is required"))
	}
	if f.stmgrSocket == "" {
		errs = append(errs, errors.New("--stmgr-socket is required"))
	}
	return errs
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// KeyInstanceMaxProcs sets GOMAXPROCS of instance processes (0: Go's
// default); the GOMAXPROCS environment variable wins. Under an executor
// the variable is always set: to this key when positive, else to the
// instance's cpu in the packing plan rounded up (docs/isolation.md).
const KeyInstanceMaxProcs = "egret.instance.gomaxprocs"

// KeyInstanceHeapFloor sets the heap floor of instance processes
// (DefaultHeapFloor when unset; see startHeapFloor).
const KeyInstanceHeapFloor = "egret.instance.heap.floor"

// maxHeapFloor bounds egret.instance.heap.floor.
const maxHeapFloor = 1 << 40

// heapFloorOf reads egret.instance.heap.floor.
func heapFloorOf(settings spi.Config) (uint64, error) {
	n, err := settings.Size(KeyInstanceHeapFloor, DefaultHeapFloor, maxHeapFloor)
	return uint64(n), err
}

// readInstanceSettings reads the --config of an instance or container
// process and its heap floor.
func readInstanceSettings(path string) (spi.Config, uint64, error) {
	settings, err := readSettings(path)
	if err != nil {
		return nil, 0, err
	}
	floor, err := heapFloorOf(settings)
	return settings, floor, err
}

func setMaxProcs(settings spi.Config) error {
	n, err := settings.Int(KeyInstanceMaxProcs, 0)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("config key %s must not be negative", KeyInstanceMaxProcs)
	}
	if n > 0 && os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(n)
	}
	return nil
}

func readSettings(path string) (spi.Config, error) {
	if path == "" {
		return spi.Config{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read --config: %w", err)
	}
	var c spi.Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("--config %s: want a JSON object of string values: %w", path, err)
	}
	return c, nil
}

// runInstance runs one task until SIGTERM or SIGINT (exit 0), a layout
// change (exit 3) or a failure (exit 1).
func runInstance(t *api.Topology, f *instanceFlags, log *zap.Logger, stderr io.Writer) int {
	settings, floor, err := readInstanceSettings(f.configFile)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	if err := setMaxProcs(settings); err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Instances allocate per tuple and keep little live: see
	// DefaultHeapFloor.
	defer startHeapFloor(floor)()
	err = gateway.Run(ctx, gateway.Config{
		Topology:      t,
		TopologyID:    f.topologyID,
		TaskID:        f.task,
		Container:     f.container,
		StMgrSocket:   f.stmgrSocket,
		MetricsSocket: f.metricsSocket,
		CkptMgrSocket: f.ckptmgrSocket,
		Settings:      settings,
		Logger:        log.With(zap.String("topology", t.Logical.Name)),
		ResourcesDir:  packageResources(),
		StateDir:      instance.DefaultStateDir(f.task),
	})
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, gateway.ErrLayoutChanged):
		log.Info("exiting for a restart with the new physical plan", zap.Error(err))
		return ExitPlanChanged
	default:
		log.Error("instance failed", zap.Error(err))
		fmt.Fprintf(stderr, "instance of task %d: %v\n", f.task, err)
		return ExitFailure
	}
}
