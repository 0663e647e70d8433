package executor

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/tmlocation"
	"github.com/egret-stream/egret/proto/egretpb"
)

// containerProcess is the name of that process (and its log file).
const containerProcess = "container"

// ContainerProcessArgs is the command line of a process-per-container
// container: the topology binary running the stream manager and the
// instances of tasks.
//
//	W/package/topology --container-process --topology N --tasks T1,T2 --container C --topology-id ID --stmgr-socket S --port P --metrics-socket M --config F --tmanager-location L [--ckptmgr-socket K]
func ContainerProcessArgs(p Params, tasks []int, ckpt bool) []string {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = strconv.Itoa(t)
	}
	args := []string{p.Paths.TopologyBinary, "--container-process",
		"--topology", p.TopologyName,
		"--tasks", strings.Join(ids, ","),
		"--container", strconv.Itoa(p.Container),
		"--topology-id", p.TopologyID,
		"--stmgr-socket", p.Paths.StmgrSocket,
		"--port", strconv.Itoa(p.StmgrPort),
		"--metrics-socket", p.Paths.MetricsSocket,
		"--config", p.Paths.ConfigFile,
		"--tmanager-location", p.Paths.TManagerLocation,
	}
	if ckpt {
		args = append(args, "--ckptmgr-socket", p.Paths.CkptMgrSocket)
	}
	return args
}

// containerMode reads the topology's container mode; an unreadable
// definition runs Heron's process per instance (the topology manager
// reports the same problem).
func (e *Executor) containerMode(ctx context.Context, store *state.Store) topology.ContainerMode {
	t, err := store.Topology(ctx, e.cfg.TopologyName)
	if err != nil {
		e.log.Warn("cannot read the topology definition; running a process per instance", zap.Error(err))
		return topology.ProcessPerInstance
	}
	return t.ContainerMode()
}

// reconcileContainer makes the container process run the stream manager
// and the instances of mine, limited to the container's required resources
// (its instances' plus padding), with a P per cpu of its instances
// (containerMaxProcs). The process keeps running while its task set
// is the same (its stream manager and instances follow a new physical plan
// live, as in process-per-instance mode); it is restarted with the new set
// when the plan changed the container's tasks, and on any plan change of
// an effectively-once topology (the restarted stream manager makes the
// topology manager roll back with the new task set).
func (e *Executor) reconcileContainer(mine *plan.Container, changed bool) {
	tasks := make([]int, 0, len(mine.Instances))
	var res plan.Resources
	for _, in := range mine.Instances {
		tasks = append(tasks, in.TaskID)
		res.CPU += in.Resources.CPU
		res.RAM += in.Resources.RAM
		res.Disk += in.Resources.Disk
	}
	instancesCPU := res.CPU
	slices.Sort(tasks)
	if r := mine.Required; r.CPU > 0 || r.RAM > 0 || r.Disk > 0 {
		// The process also runs the stream manager: the container's
		// padding is its share.
		res = r
	}
	args := ContainerProcessArgs(e.params, tasks, e.eo)
	e.mu.Lock()
	cur := e.procs[containerProcess]
	e.mu.Unlock()
	if cur != nil && slices.Equal(cur.args, args) {
		if changed && e.eo {
			e.log.Info("packing plan changed; restarting the container process so its stream manager re-registers")
			cur.requestRestart("packing plan changed")
		}
		return
	}
	if cur != nil {
		e.log.Info("packing plan changed this container's tasks; restarting the container process with them", zap.Ints("tasks", tasks))
		e.stopProcesses([]*process{cur})
	}
	p := newProcess(e, containerProcess, KindContainer, 0, args)
	p.limits = instanceLimits(res, e.set.maxProcs)
	if e.set.maxProcs <= 0 {
		p.limits.GOMAXPROCS = containerMaxProcs(instancesCPU, runtime.NumCPU())
	}
	p.dir = filepath.Join(e.paths.InstancesDir, containerProcess)
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		e.log.Warn("cannot create the container process's working directory; it runs in the container's", zap.Error(err))
		p.dir = e.paths.WorkDir
	}
	e.launch(p, p.limits.cgroupLimits())
}

// mirrorTManager copies the topology manager's location from the state
// manager into the file the container process's stream manager reads
// (daemons/tmlocation): the topology binary links no state manager
// backend. It runs until ctx ends.
func (e *Executor) mirrorTManager(ctx context.Context, src spi.StateManager, file string) {
	path := state.Path(state.TManagersDir, e.cfg.TopologyName)
	var events <-chan spi.Event
	var last []byte
	have := false
	for ctx.Err() == nil {
		if events == nil {
			var err error
			if events, err = src.Watch(ctx, path); err != nil {
				events = nil
			}
		}
		n, err := src.Get(ctx, path)
		switch {
		case err == nil && (!have || !bytes.Equal(n.Data, last)):
			var loc egretpb.TManagerLocation
			if err := proto.Unmarshal(n.Data, &loc); err != nil {
				e.log.Warn("the topology manager's location does not decode; not mirrored", zap.Error(err))
				break
			}
			if err := tmlocation.Write(file, &loc); err != nil {
				e.log.Warn("cannot mirror the topology manager's location", zap.Error(err))
				break
			}
			last, have = n.Data, true
		case errors.Is(err, spi.ErrNotFound) && have:
			if err := tmlocation.Write(file, nil); err != nil {
				e.log.Warn("cannot mirror the topology manager's location", zap.Error(err))
				break
			}
			last, have = nil, false
		case err != nil && !errors.Is(err, spi.ErrNotFound) && ctx.Err() == nil:
			e.log.Warn("cannot read the topology manager's location", zap.Error(err))
		}
		t := time.NewTimer(mirrorPoll)
		select {
		case _, ok := <-events:
			if !ok {
				events = nil
			}
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// mirrorPoll bounds how long a missed watch event delays the mirror.
const mirrorPoll = time.Second

// containerMaxProcs is the GOMAXPROCS of a container process whose
// instances need cpu in all: ⌈cpu⌉, at least 1 and at most the machine's
// CPUs. The stream manager's share of the padding adds no P: its
// goroutines do little per tuple and run between the instances', and its
// system calls need no P. A P more than the instances need, or than the
// machine has, only adds threads that spin and wake each other for every
// batch handed over (measured on T1, one instance per container: 2 Ps
// cost 8-11% more CPU per tuple than 1, and 33-49% more with acking; on
// T3: 4 Ps on 2 CPUs cost 15-35% more than 2).
// A plan that gives the instances no cpu leaves it unset (0: Go's
// default, the machine's CPUs).
func containerMaxProcs(cpu float64, cpus int) int {
	if cpu <= 0 {
		return 0
	}
	return min(max(int(math.Ceil(cpu-1e-9)), 1), max(cpus, 1))
}
