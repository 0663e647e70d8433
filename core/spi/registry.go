package spi

import (
	"fmt"
	"slices"
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

// registry maps backend names to factories of one kind, with the config
// keys each backend reads. Built-ins register from init functions; a
// duplicate name, a bad or duplicate key is a programming error and panics.
type registry[F any] struct {
	kind string // the noun: "state manager"
	mu   sync.RWMutex
	m    map[string]F
	keys map[string][]Key
}

// keyed is what BackendNames and BackendKeys see of a registry.
type keyed interface {
	noun() string
	names() []string
	declared(name string) ([]Key, bool)
}

// byKind maps each Kind constant to its registry.
var byKind = map[string]keyed{}

func newRegistry[F any](kind, noun string) *registry[F] {
	r := &registry[F]{kind: noun, m: map[string]F{}, keys: map[string][]Key{}}
	byKind[kind] = r
	return r
}

func (r *registry[F]) register(name string, f F, keys []Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic(fmt.Sprintf("spi: %s %q registered twice", r.kind, name))
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if err := k.Validate(); err != nil {
			panic(fmt.Sprintf("spi: %s %q: %v", r.kind, name, err))
		}
		if seen[k.Name] {
			panic(fmt.Sprintf("spi: %s %q: key %s declared twice", r.kind, name, k.Name))
		}
		seen[k.Name] = true
	}
	r.m[name] = f
	r.keys[name] = slices.Clone(keys)
}

func (r *registry[F]) noun() string { return r.kind }

func (r *registry[F]) declared(name string) ([]Key, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	keys, ok := r.keys[name]
	return slices.Clone(keys), ok
}

// KindNoun names kind (a Kind constant) in messages: "state manager".
func KindNoun(kind string) string {
	if r, ok := byKind[kind]; ok {
		return r.noun()
	}
	return kind
}

// BackendNames lists the built-in backends of kind (a Kind constant),
// sorted; nil for an unknown kind.
func BackendNames(kind string) []string {
	r, ok := byKind[kind]
	if !ok {
		return nil
	}
	return r.names()
}

// BackendKeys returns the config keys the built-in backend kind/name
// declared when it registered, and whether it is registered.
func BackendKeys(kind, name string) ([]Key, bool) {
	r, ok := byKind[kind]
	if !ok {
		return nil, false
	}
	return r.declared(name)
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
	stateManagers = newRegistry[StateManagerFactory](KindStateManager, "state manager")
	uploaders     = newRegistry[UploaderFactory](KindUploader, "uploader")
	packings      = newRegistry[PackingFactory](KindPacking, "packing algorithm")
	schedulers    = newRegistry[SchedulerFactory](KindScheduler, "scheduler")
	metricsSinks  = newRegistry[MetricsSinkFactory](KindMetricsSink, "metrics sink")
)

// RegisterPacking registers a built-in packing algorithm with the config
// keys it reads.
func RegisterPacking(name string, f PackingFactory, keys ...Key) { packings.register(name, f, keys) }

// LookupPacking returns the built-in packing factory named name.
func LookupPacking(name string) (PackingFactory, error) { return packings.lookup(name) }

// PackingNames lists the built-in packing algorithms.
func PackingNames() []string { return packings.names() }

// RegisterScheduler registers a built-in scheduler with the config keys it
// reads.
func RegisterScheduler(name string, f SchedulerFactory, keys ...Key) {
	schedulers.register(name, f, keys)
}

// LookupScheduler returns the built-in scheduler factory named name.
func LookupScheduler(name string) (SchedulerFactory, error) { return schedulers.lookup(name) }

// SchedulerNames lists the built-in schedulers.
func SchedulerNames() []string { return schedulers.names() }

// RegisterStateManager registers a built-in state manager with the config
// keys it reads.
func RegisterStateManager(name string, f StateManagerFactory, keys ...Key) {
	stateManagers.register(name, f, keys)
}

// LookupStateManager returns the built-in state manager factory named name.
func LookupStateManager(name string) (StateManagerFactory, error) { return stateManagers.lookup(name) }

// StateManagerNames lists the built-in state managers.
func StateManagerNames() []string { return stateManagers.names() }

// RegisterUploader registers a built-in uploader with the config keys it
// reads.
func RegisterUploader(name string, f UploaderFactory, keys ...Key) { uploaders.register(name, f, keys) }

// LookupUploader returns the built-in uploader factory named name.
func LookupUploader(name string) (UploaderFactory, error) { return uploaders.lookup(name) }

// UploaderNames lists the built-in uploaders.
func UploaderNames() []string { return uploaders.names() }

// RegisterMetricsSink registers a metrics sink backend (kind metricssink)
// with the config keys it reads.
func RegisterMetricsSink(name string, f MetricsSinkFactory, keys ...Key) {
	metricsSinks.register(name, f, keys)
}

// LookupMetricsSink returns the registered metrics sink factory named name.
func LookupMetricsSink(name string) (MetricsSinkFactory, error) { return metricsSinks.lookup(name) }

// MetricsSinkNames lists the registered metrics sinks.
func MetricsSinkNames() []string { return metricsSinks.names() }
