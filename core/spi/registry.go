package spi

import (
	"fmt"
	"sort"
	"sync"

	"go.uber.org/zap"
)

// StateManagerFactory builds a state manager from its config.
type StateManagerFactory func(cfg Config, log *zap.Logger) (StateManager, error)

// UploaderFactory builds an uploader from its config.
type UploaderFactory func(cfg Config, log *zap.Logger) (Uploader, error)

// MetricsSinkFactory builds an external metrics sink from its config.
type MetricsSinkFactory func(cfg Config, log *zap.Logger) (MetricsSink, error)

// registry maps backend names to factories of one kind. Built-ins register
// from init functions; a duplicate name is a programming error and panics.
type registry[F any] struct {
	kind string
	mu   sync.RWMutex
	m    map[string]F
}

func newRegistry[F any](kind string) *registry[F] {
	return &registry[F]{kind: kind, m: map[string]F{}}
}

func (r *registry[F]) register(name string, f F) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic(fmt.Sprintf("spi: %s %q registered twice", r.kind, name))
	}
	r.m[name] = f
}

func (r *registry[F]) lookup(name string) (F, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.m[name]
	if !ok {
		return f, fmt.Errorf("%s %q: %w (built in: %v)", r.kind, name, ErrUnknownBackend, r.namesLocked())
	}
	return f, nil
}

func (r *registry[F]) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.namesLocked()
}

func (r *registry[F]) namesLocked() []string {
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// The built-in catalogs. They are written only by init functions.
var (
	stateManagers = newRegistry[StateManagerFactory]("state manager")
	uploaders     = newRegistry[UploaderFactory]("uploader")
	packings      = newRegistry[PackingFactory]("packing algorithm")
	schedulers    = newRegistry[SchedulerFactory]("scheduler")
	metricsSinks  = newRegistry[MetricsSinkFactory]("metrics sink")
)

// RegisterPacking registers a built-in packing algorithm.
func RegisterPacking(name string, f PackingFactory) { packings.register(name, f) }

// LookupPacking returns the built-in packing factory named name.
func LookupPacking(name string) (PackingFactory, error) { return packings.lookup(name) }

// PackingNames lists the built-in packing algorithms.
func PackingNames() []string { return packings.names() }

// RegisterScheduler registers a built-in scheduler.
func RegisterScheduler(name string, f SchedulerFactory) { schedulers.register(name, f) }

// LookupScheduler returns the built-in scheduler factory named name.
func LookupScheduler(name string) (SchedulerFactory, error) { return schedulers.lookup(name) }

// SchedulerNames lists the built-in schedulers.
func SchedulerNames() []string { return schedulers.names() }

// RegisterStateManager registers a built-in state manager.
func RegisterStateManager(name string, f StateManagerFactory) { stateManagers.register(name, f) }

// LookupStateManager returns the built-in state manager factory named name.
func LookupStateManager(name string) (StateManagerFactory, error) { return stateManagers.lookup(name) }

// StateManagerNames lists the built-in state managers.
func StateManagerNames() []string { return stateManagers.names() }

// RegisterUploader registers a built-in uploader.
func RegisterUploader(name string, f UploaderFactory) { uploaders.register(name, f) }

// LookupUploader returns the built-in uploader factory named name.
func LookupUploader(name string) (UploaderFactory, error) { return uploaders.lookup(name) }

// UploaderNames lists the built-in uploaders.
func UploaderNames() []string { return uploaders.names() }

// RegisterMetricsSink registers a metrics sink backend (kind metricssink).
func RegisterMetricsSink(name string, f MetricsSinkFactory) { metricsSinks.register(name, f) }

// LookupMetricsSink returns the registered metrics sink factory named name.
func LookupMetricsSink(name string) (MetricsSinkFactory, error) { return metricsSinks.lookup(name) }

// MetricsSinkNames lists the registered metrics sinks.
func MetricsSinkNames() []string { return metricsSinks.names() }
