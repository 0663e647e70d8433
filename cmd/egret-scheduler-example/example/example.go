package example

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
)

// KeyStateFile names the JSON file the scheduler keeps its allocations in.
const KeyStateFile = "egret.scheduler.example.state.file"

// Keys are the config keys the scheduler reads, which the plugin declares
// (plugins.WithKeys): egret checks them when it loads a cluster config
// that selects it, and names the nearest one for a misspelled key.
var Keys = []spi.Key{
	{Name: KeyStateFile, Type: spi.KeyString, Required: true,
		Doc: "The JSON file that records the running containers (the example's resource manager), e.g. ${EGRET_HOME}/example-cluster.json."},
}

// State is the content of the state file.
type State struct {
	// NextAlloc numbers allocations.
	NextAlloc int `json:"next_alloc"`
	// Topologies maps a topology name to its job.
	Topologies map[string]*Job `json:"topologies"`
}

// Job is one running topology.
type Job struct {
	TopologyID string `json:"topology_id"`
	PackageURI string `json:"package_uri"`
	// Containers maps a container id (as a string: JSON keys are strings)
	// to its allocation.
	Containers map[string]Allocation `json:"containers"`
}

// Allocation is one running container.
type Allocation struct {
	// ID changes every time the container is (re)started.
	ID        string  `json:"id"`
	Instances int     `json:"instances"`
	CPU       float64 `json:"cpu"`
	RAM       int64   `json:"ram"`
}

// Scheduler is the example scheduler.
type Scheduler struct {
	file   string
	log    *zap.Logger
	closed atomic.Bool
}

var (
	_ spi.Scheduler = (*Scheduler)(nil)
	_ spi.Scalable  = (*Scheduler)(nil)
)

// New builds the scheduler from cfg; it is a spi.SchedulerFactory.
func New(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
	file := cfg.String(KeyStateFile, "")
	if file == "" {
		return nil, fmt.Errorf("example scheduler: config key %s is required (the JSON file that records the running containers, e.g. ${EGRET_HOME}/example-cluster.json)", KeyStateFile)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("example scheduler: config key %s: %w", KeyStateFile, err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Scheduler{file: abs, log: log.With(zap.String("state_file", abs))}, nil
}

// ReadState reads a state file; a missing file is an empty state.
func ReadState(file string) (*State, error) {
	st := &State{Topologies: map[string]*Job{}}
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state file: %w", err)
	}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("state file %s is corrupt (fix or delete it): %w", file, err)
	}
	if st.Topologies == nil {
		st.Topologies = map[string]*Job{}
	}
	return st, nil
}

// Containers returns the running containers of topology in file:
// container id → allocation id. It is what schedulertest's
// Harness.Containers observes.
func Containers(file, topology string) (map[int]string, error) {
	st, err := ReadState(file)
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	if j := st.Topologies[topology]; j != nil {
		for id, a := range j.Containers {
			n, err := strconv.Atoi(id)
			if err != nil {
				return nil, fmt.Errorf("state file %s: topology %s: container id %q is not a number", file, topology, id)
			}
			out[n] = a.ID
		}
	}
	return out, nil
}

// update runs f on the state under the file lock and writes the result
// atomically when f succeeds.
func (s *Scheduler) update(ctx context.Context, f func(*State) error) error {
	if s.closed.Load() {
		return fmt.Errorf("example scheduler: %w", spi.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.file), 0o755); err != nil {
		return fmt.Errorf("example scheduler: %w", err)
	}
	unlock, err := lockFile(s.file + ".lock")
	if err != nil {
		return fmt.Errorf("example scheduler: lock %s.lock: %w", s.file, err)
	}
	defer unlock()
	st, err := ReadState(s.file)
	if err != nil {
		return fmt.Errorf("example scheduler: %w", err)
	}
	if err := f(st); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("example scheduler: encode state: %w", err)
	}
	tmp := s.file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("example scheduler: write state: %w", err)
	}
	if err := os.Rename(tmp, s.file); err != nil {
		return fmt.Errorf("example scheduler: write state: %w", err)
	}
	return nil
}

func (st *State) allocate(c plan.Container) Allocation {
	st.NextAlloc++
	return Allocation{ID: "alloc-" + strconv.Itoa(st.NextAlloc), Instances: len(c.Instances), CPU: c.Required.CPU, RAM: c.Required.RAM}
}

// containersOf returns container 0 (the topology manager's) and the plan's
// containers.
func containersOf(job spi.Job) ([]plan.Container, error) {
	if job.Topology == "" {
		return nil, errors.New("the job names no topology")
	}
	if job.Plan == nil {
		return nil, fmt.Errorf("topology %s: the job has no packing plan", job.Topology)
	}
	out := []plan.Container{{ID: 0}}
	for _, c := range job.Plan.Containers {
		if c.ID < 1 {
			return nil, fmt.Errorf("topology %s: container id %d must be at least 1", job.Topology, c.ID)
		}
		out = append(out, c)
	}
	return out, nil
}

// Schedule records an allocation for containers 0..N of job.
func (s *Scheduler) Schedule(ctx context.Context, job spi.Job) error {
	containers, err := containersOf(job)
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	err = s.update(ctx, func(st *State) error {
		if st.Topologies[job.Topology] != nil {
			return fmt.Errorf("schedule %s: the topology is already running (kill it first): %w", job.Topology, spi.ErrExists)
		}
		j := &Job{TopologyID: job.TopologyID, PackageURI: job.PackageURI, Containers: map[string]Allocation{}}
		for _, c := range containers {
			j.Containers[strconv.Itoa(c.ID)] = st.allocate(c)
		}
		st.Topologies[job.Topology] = j
		return nil
	})
	if err == nil {
		s.log.Info("scheduled", zap.String("topology", job.Topology), zap.Int("containers", len(containers)))
	}
	return err
}

// Kill removes the topology's allocations; killing a topology that does
// not run succeeds.
func (s *Scheduler) Kill(ctx context.Context, topology string) error {
	err := s.update(ctx, func(st *State) error {
		delete(st.Topologies, topology)
		return nil
	})
	if err == nil {
		s.log.Info("killed", zap.String("topology", topology))
	}
	return err
}

// Restart gives one container, or all, a new allocation.
func (s *Scheduler) Restart(ctx context.Context, topology string, container int) error {
	return s.update(ctx, func(st *State) error {
		j := st.Topologies[topology]
		if j == nil {
			return fmt.Errorf("restart %s: the topology does not run: %w", topology, spi.ErrNotFound)
		}
		ids := []string{strconv.Itoa(container)}
		if container == spi.AllContainers {
			ids = slices.Sorted(maps.Keys(j.Containers))
		}
		for _, id := range ids {
			a, ok := j.Containers[id]
			if !ok {
				return fmt.Errorf("restart %s: container %s does not exist (the topology has %d containers): %w",
					topology, id, len(j.Containers), spi.ErrNotFound)
			}
			st.NextAlloc++
			a.ID = "alloc-" + strconv.Itoa(st.NextAlloc)
			j.Containers[id] = a
		}
		s.log.Info("restarted", zap.String("topology", topology), zap.Strings("containers", ids))
		return nil
	})
}

// Update applies job.Plan: containers the plan keeps keep their
// allocation, new ones are allocated, the others removed.
func (s *Scheduler) Update(ctx context.Context, job spi.Job) error {
	containers, err := containersOf(job)
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	return s.update(ctx, func(st *State) error {
		j := st.Topologies[job.Topology]
		if j == nil {
			return fmt.Errorf("update %s: the topology does not run: %w", job.Topology, spi.ErrNotFound)
		}
		next := map[string]Allocation{}
		for _, c := range containers {
			id := strconv.Itoa(c.ID)
			if a, ok := j.Containers[id]; ok {
				a.Instances, a.CPU, a.RAM = len(c.Instances), c.Required.CPU, c.Required.RAM
				next[id] = a
			} else {
				next[id] = st.allocate(c)
			}
		}
		j.Containers = next
		j.TopologyID, j.PackageURI = job.TopologyID, job.PackageURI
		s.log.Info("updated", zap.String("topology", job.Topology), zap.Int("containers", len(next)))
		return nil
	})
}

// JobLinks returns the state file's URL.
func (s *Scheduler) JobLinks(ctx context.Context, topology string) ([]string, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("example scheduler: %w", spi.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return []string{"file://" + filepath.ToSlash(s.file) + "#" + topology}, nil
}

// AddContainers allocates containers of a running topology.
func (s *Scheduler) AddContainers(ctx context.Context, topology string, containers []plan.Container) error {
	return s.update(ctx, func(st *State) error {
		j := st.Topologies[topology]
		if j == nil {
			return fmt.Errorf("add containers to %s: the topology does not run: %w", topology, spi.ErrNotFound)
		}
		for _, c := range containers {
			if _, ok := j.Containers[strconv.Itoa(c.ID)]; ok || c.ID < 1 {
				return fmt.Errorf("add container %d to %s: %w", c.ID, topology, spi.ErrExists)
			}
		}
		for _, c := range containers {
			j.Containers[strconv.Itoa(c.ID)] = st.allocate(c)
		}
		return nil
	})
}

// RemoveContainers removes containers of a running topology; removing a
// container that does not run succeeds.
func (s *Scheduler) RemoveContainers(ctx context.Context, topology string, containers []plan.Container) error {
	return s.update(ctx, func(st *State) error {
		j := st.Topologies[topology]
		if j == nil {
			return fmt.Errorf("remove containers from %s: the topology does not run: %w", topology, spi.ErrNotFound)
		}
		ids := make([]int, 0, len(containers))
		for _, c := range containers {
			if c.ID == 0 {
				return fmt.Errorf("remove containers from %s: container 0 runs the topology manager and cannot be removed", topology)
			}
			ids = append(ids, c.ID)
			delete(j.Containers, strconv.Itoa(c.ID))
		}
		slices.Sort(ids)
		s.log.Info("removed containers", zap.String("topology", topology), zap.Ints("containers", ids))
		return nil
	})
}

// Close marks the scheduler closed; the topologies keep running.
func (s *Scheduler) Close() error {
	s.closed.Store(true)
	return nil
}
