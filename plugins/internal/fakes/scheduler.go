package fakes

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
)

// Recorder is a scheduler that records its calls. JobLinks returns the
// calls recorded for a topology, so a test can read them across the plugin
// boundary. Restart of a topology that was never scheduled fails with
// spi.ErrNotFound.
type Recorder struct {
	mu     sync.Mutex
	calls  map[string][]string
	closed bool
	log    *zap.Logger
}

// NewRecorder is a spi.SchedulerFactory. Config key "test.fail" makes it
// fail with that message.
func NewRecorder(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
	if msg := cfg.String("test.fail", ""); msg != "" {
		return nil, fmt.Errorf("config key test.fail: %s", msg)
	}
	log.Info("recorder scheduler configured", zap.Int("config_keys", len(cfg)), zap.String("cluster", cfg.String("egret.cluster", "")))
	return &Recorder{calls: map[string][]string{}, log: log}, nil
}

// NewLaunchingRecorder is NewRecorder whose scheduler also implements
// spi.Launcher and spi.Scalable.
func NewLaunchingRecorder(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
	s, err := NewRecorder(cfg, log)
	if err != nil {
		return nil, err
	}
	return &FullRecorder{s.(*Recorder)}, nil
}

// Launching and Scalable return Recorder variants with one capability.
func Launching(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
	s, err := NewRecorder(cfg, log)
	if err != nil {
		return nil, err
	}
	return &LaunchRecorder{s.(*Recorder)}, nil
}

// Scalable returns a Recorder that implements spi.Scalable only.
func Scalable(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
	s, err := NewRecorder(cfg, log)
	if err != nil {
		return nil, err
	}
	return &ScaleRecorder{s.(*Recorder)}, nil
}

func (r *Recorder) record(topology, format string, args ...any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("recorder: %w", spi.ErrClosed)
	}
	r.calls[topology] = append(r.calls[topology], fmt.Sprintf(format, args...))
	return nil
}

func describeJob(j spi.Job) string {
	keys := j.Config.Keys()
	containers := 0
	if j.Plan != nil {
		containers = len(j.Plan.Containers)
	}
	return fmt.Sprintf("id=%s cluster=%s role=%s environ=%s uri=%s sha=%s containers=%d config=%s",
		j.TopologyID, j.Cluster, j.Role, j.Environ, j.PackageURI, j.PackageSHA256, containers, strings.Join(keys, ","))
}

// Schedule implements spi.Scheduler.
func (r *Recorder) Schedule(ctx context.Context, j spi.Job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.log.Info("schedule", zap.String("topology", j.Topology))
	return r.record(j.Topology, "schedule %s", describeJob(j))
}

// Kill implements spi.Scheduler.
func (r *Recorder) Kill(_ context.Context, topology string) error {
	return r.record(topology, "kill")
}

// Restart implements spi.Scheduler.
func (r *Recorder) Restart(_ context.Context, topology string, container int) error {
	r.mu.Lock()
	_, known := r.calls[topology]
	r.mu.Unlock()
	if !known {
		return fmt.Errorf("restart %s: topology %w", topology, spi.ErrNotFound)
	}
	return r.record(topology, "restart %d", container)
}

// Update implements spi.Scheduler.
func (r *Recorder) Update(_ context.Context, j spi.Job) error {
	return r.record(j.Topology, "update %s", describeJob(j))
}

// JobLinks returns the recorded calls of topology.
func (r *Recorder) JobLinks(_ context.Context, topology string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("recorder: %w", spi.ErrClosed)
	}
	return append([]string(nil), r.calls[topology]...), nil
}

// Close implements spi.Scheduler.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

func (r *Recorder) launch(_ context.Context, j spi.Job) error {
	return r.record(j.Topology, "launch %s", describeJob(j))
}

func (r *Recorder) scale(op, topology string, containers []plan.Container) error {
	var ids []int
	for _, c := range containers {
		ids = append(ids, c.ID)
		if len(c.Instances) == 0 {
			return fmt.Errorf("%s %s: container %d has no instances", op, topology, c.ID)
		}
	}
	sort.Ints(ids)
	return r.record(topology, "%s %v", op, ids)
}

// LaunchRecorder is a Recorder that implements spi.Launcher.
type LaunchRecorder struct{ *Recorder }

// Launch implements spi.Launcher.
func (r *LaunchRecorder) Launch(ctx context.Context, j spi.Job) error { return r.launch(ctx, j) }

// ScaleRecorder is a Recorder that implements spi.Scalable.
type ScaleRecorder struct{ *Recorder }

// AddContainers implements spi.Scalable.
func (r *ScaleRecorder) AddContainers(_ context.Context, topology string, cs []plan.Container) error {
	return r.scale("add", topology, cs)
}

// RemoveContainers implements spi.Scalable.
func (r *ScaleRecorder) RemoveContainers(_ context.Context, topology string, cs []plan.Container) error {
	return r.scale("remove", topology, cs)
}

// FullRecorder is a Recorder that implements spi.Launcher and
// spi.Scalable.
type FullRecorder struct{ *Recorder }

// Launch implements spi.Launcher.
func (r *FullRecorder) Launch(ctx context.Context, j spi.Job) error { return r.launch(ctx, j) }

// AddContainers implements spi.Scalable.
func (r *FullRecorder) AddContainers(_ context.Context, topology string, cs []plan.Container) error {
	return r.scale("add", topology, cs)
}

// RemoveContainers implements spi.Scalable.
func (r *FullRecorder) RemoveContainers(_ context.Context, topology string, cs []plan.Container) error {
	return r.scale("remove", topology, cs)
}
