package runner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/daemons/instance"
	"github.com/egret-stream/egret/daemons/instance/gateway"
	"github.com/egret-stream/egret/daemons/stmgr"
	"github.com/egret-stream/egret/daemons/tmlocation"
	"github.com/egret-stream/egret/internal/hostaddr"
	"github.com/egret-stream/egret/internal/memconn"
)

// containerFlags are the flags of container mode (topology.container.mode
// process-per-container), with which a container's executor runs the
// stream manager and every instance of the container in one process. The
// container, topology id, sockets and config are instanceFlags'.
type containerFlags struct {
	enabled    bool
	topology   string
	tasks      string
	port       int
	tmLocation string
}

func (f *containerFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.enabled, "container-process", false, "run a container's stream manager and instances in this process (topology.container.mode process-per-container; used by the executor)")
	fs.StringVar(&f.topology, "topology", "", "with --container-process: the submitted topology name")
	fs.StringVar(&f.tasks, "tasks", "", "with --container-process: the comma-separated task ids of the container")
	fs.IntVar(&f.port, "port", 0, "with --container-process: the stream manager's TCP port for peers (0: any)")
	fs.StringVar(&f.tmLocation, "tmanager-location", "", "with --container-process: the file where the executor mirrors the topology manager's location")
}

// parseTasks parses --tasks.
func parseTasks(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--tasks %q: %q is not a task id", s, p)
		}
		if seen[n] {
			return nil, fmt.Errorf("--tasks %q: task %d appears twice", s, n)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

func (f *containerFlags) check(inst *instanceFlags) ([]int, error) {
	var errs []error
	if f.topology == "" {
		errs = append(errs, errors.New("--topology is required"))
	}
	errs = append(errs, inst.checkShared()...)
	if f.tmLocation == "" {
		errs = append(errs, errors.New("--tmanager-location is required"))
	}
	if f.port < 0 || f.port > 65535 {
		errs = append(errs, fmt.Errorf("--port %d is not a TCP port", f.port))
	}
	tasks, err := parseTasks(f.tasks)
	if err != nil {
		errs = append(errs, err)
	}
	return tasks, errors.Join(errs...)
}

// runContainer runs the container's stream manager and the instances of
// tasks in this process, the instances connected to the stream manager in
// memory, until SIGTERM or SIGINT (exit 0) or until the stream manager or
// an instance fails (exit 1: the executor restarts the whole container).
// An instance whose task the physical plan moved away ends alone; the
// executor restarts the container with its new tasks.
func runContainer(t *api.Topology, inst *instanceFlags, f *containerFlags, tasks []int, log *zap.Logger, stderr io.Writer) int {
	settings, floor, err := readInstanceSettings(inst.configFile)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	ln := memconn.NewListener(inst.stmgrSocket+" (in memory)", 0)
	s, err := stmgr.New(stmgr.Config{
		TopologyName:  f.topology,
		TopologyID:    inst.topologyID,
		Container:     inst.container,
		Socket:        inst.stmgrSocket,
		Local:         ln,
		Port:          f.port,
		BindHost:      hostaddr.Bind(),
		Host:          hostaddr.Advertised(),
		MetricsSocket: inst.metricsSocket,
		CkptMgrSocket: inst.ckptmgrSocket,
		TManager:      tmlocation.File{Path: f.tmLocation, Poll: tmanagerStatePoll},
		Settings:      settings,
	}, log.Named("stmgr"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitFailure
	}
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// One runtime allocates for every instance: the floor of each
	// (egret.instance.heap.floor, measured per instance process) adds up.
	defer startHeapFloor(floor * uint64(max(len(tasks), 1)))()
	// The instances stop first, so that what they flush on the way out
	// reaches the stream manager, which stops after them.
	smCtx, stopSM := context.WithCancel(context.Background())
	defer stopSM()
	instCtx, stopInstances := context.WithCancel(sig)
	defer stopInstances()
	smDone := make(chan error, 1)
	go func() { smDone <- s.Run(smCtx) }()

	failed := make(chan error, len(tasks))
	var wg sync.WaitGroup
	for _, task := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := gateway.Run(instCtx, gateway.Config{
				Topology:      t,
				TopologyID:    inst.topologyID,
				TaskID:        task,
				Container:     inst.container,
				StMgrSocket:   inst.stmgrSocket,
				Dial:          ln.Dial,
				MetricsSocket: inst.metricsSocket,
				CkptMgrSocket: inst.ckptmgrSocket,
				Settings:      settings,
				Logger:        log.With(zap.String("topology", f.topology), zap.Int("task", task)),
				ResourcesDir:  packageResources(),
				StateDir:      instance.DefaultStateDir(task),
			})
			switch {
			case err == nil || instCtx.Err() != nil:
			case errors.Is(err, gateway.ErrLayoutChanged):
				log.Info("the physical plan moved this task away; its instance stops (the executor restarts the container with its new tasks)", zap.Int("task", task), zap.Error(err))
			default:
				failed <- fmt.Errorf("instance of task %d: %w", task, err)
			}
		}()
	}
	code := ExitOK
	select {
	case <-sig.Done():
	case err := <-failed:
		log.Error("an instance failed; stopping the container", zap.Error(err))
		fmt.Fprintln(stderr, err)
		code = ExitFailure
	case err := <-smDone:
		if err == nil {
			err = errors.New("stopped")
		}
		log.Error("the stream manager failed; stopping the container", zap.Error(err))
		fmt.Fprintf(stderr, "stream manager: %v\n", err)
		stopInstances()
		wg.Wait()
		return ExitFailure
	}
	stopInstances()
	wg.Wait()
	stopSM()
	if err := <-smDone; err != nil {
		log.Error("stream manager", zap.Error(err))
		code = ExitFailure
	}
	return code
}

// tmanagerStatePoll is how often the container process re-reads the
// topology manager's location the executor mirrors.
const tmanagerStatePoll = 100 * time.Millisecond
