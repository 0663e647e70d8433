package plugins

import (
	"fmt"
	"os"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
)

// EnvWatchParent, set to "false", turns off the parent watchdog of a
// plugin process (see Serve).
const EnvWatchParent = "EGRET_PLUGIN_WATCH_PARENT"

// parentPoll is how often a plugin checks that its host is alive.
const parentPoll = 200 * time.Millisecond

// ServeStateManager serves the state manager built by f as a plugin and
// never returns. Call it from the plugin binary's main.
func ServeStateManager(f spi.StateManagerFactory) { Serve(spi.KindStateManager, f) }

// ServeUploader serves the uploader built by f as a plugin.
func ServeUploader(f spi.UploaderFactory) { Serve(spi.KindUploader, f) }

// ServePacking serves the packing algorithm built by f as a plugin.
func ServePacking(f spi.PackingFactory) { Serve(spi.KindPacking, f) }

// ServeScheduler serves the scheduler built by f as a plugin. Options add
// optional services, e.g. WithObserver for `egret plugin verify`.
func ServeScheduler(f spi.SchedulerFactory, opts ...ServeOption) {
	Serve(spi.KindScheduler, f, opts...)
}

// ServeMetricsSink serves the metrics sink built by f as a plugin.
func ServeMetricsSink(f spi.MetricsSinkFactory) { Serve(spi.KindMetricsSink, f) }

// ServeCheckpointStorage serves the checkpoint storage built by f as a
// plugin.
func ServeCheckpointStorage(f spi.CheckpointStorageFactory) { Serve(spi.KindCheckpointStorage, f) }

// ServeBuiltin serves the built-in implementation of kind registered as
// name (blank-import its package), e.g. to run a built-in out of process.
func ServeBuiltin(kind, name string) {
	var impl any
	var err error
	switch kind {
	case spi.KindStateManager:
		impl, err = spi.LookupStateManager(name)
	case spi.KindUploader:
		impl, err = spi.LookupUploader(name)
	case spi.KindPacking:
		impl, err = spi.LookupPacking(name)
	case spi.KindScheduler:
		impl, err = spi.LookupScheduler(name)
	case spi.KindMetricsSink:
		impl, err = spi.LookupMetricsSink(name)
	case spi.KindCheckpointStorage:
		impl, err = spi.LookupCheckpointStorage(name)
	default:
		err = fmt.Errorf("unknown plugin kind %q (want one of %v)", kind, spi.Kinds)
	}
	if err != nil {
		fail(err)
	}
	keys, _ := spi.BackendKeys(kind, name)
	Serve(kind, impl, WithKeys(keys...))
}

// Serve serves impl as a plugin of kind and never returns. impl is the
// kind's factory (spi.SchedulerFactory or a func with its signature) or a
// ready implementation (spi.Scheduler), which then ignores the config the
// host sends.
//
// The factory gets the host's config and a zap logger whose lines the host
// re-emits as structured logs. Nothing may be written to stdout before
// Serve: the first line of stdout is go-plugin's handshake. Afterwards
// stdout and stderr are forwarded to the host's log.
//
// The plugin exits when the host asks it to (closing the implementation
// first), and within a fraction of a second after the host process dies
// (a parent watchdog; EGRET_PLUGIN_WATCH_PARENT=false turns it off).
func Serve(kind string, impl any, opts ...ServeOption) {
	log := NewPluginLogger()
	var o serveOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.observer != nil && kind != spi.KindScheduler {
		fail(fmt.Errorf("serve %s: WithObserver is for scheduler plugins only", kind))
	}
	set, closeBackend, err := pluginSet(kind, impl, log, o)
	if err != nil {
		fail(err)
	}
	if o.keysDeclared {
		p, err := newConfigKeysPlugin(o.keys)
		if err != nil {
			fail(fmt.Errorf("serve %s: WithKeys: %w", kind, err))
		}
		set[configKeysName] = p
	}
	watchParent(log)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         set,
		GRPCServer:      plugin.DefaultGRPCServer,
		Logger:          NewHCLogger(log.Named("go-plugin")),
	})
	// The host asked the plugin to stop; close the backend in case the
	// host did not (a second close does nothing).
	log.Debug("plugin stopping: closing the backend")
	if err := closeBackend(); err != nil {
		log.Warn("closing the backend on shutdown", zap.Error(err))
	}
	_ = log.Sync()
	os.Exit(0)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "egret plugin: %v\n", err)
	os.Exit(1)
}

// pluginSet builds the plugin-side plugin set of kind around impl.
func pluginSet(kind string, impl any, log *zap.Logger, o serveOptions) (plugin.PluginSet, func() error, error) {
	bad := func(want string) error {
		return fmt.Errorf("serve %s: got %T, want %s", kind, impl, want)
	}
	switch kind {
	case spi.KindStateManager:
		var f spi.StateManagerFactory
		switch v := impl.(type) {
		case spi.StateManagerFactory:
			f = v
		case func(spi.Config, *zap.Logger) (spi.StateManager, error):
			f = v
		case spi.StateManager:
			f = func(spi.Config, *zap.Logger) (spi.StateManager, error) { return v, nil }
		}
		if f == nil {
			return nil, nil, bad("spi.StateManagerFactory or spi.StateManager")
		}
		p := &StateManagerPlugin{Factory: f, Log: log}
		return plugin.PluginSet{kind: p}, p.closeBackend, nil
	case spi.KindUploader:
		var f spi.UploaderFactory
		switch v := impl.(type) {
		case spi.UploaderFactory:
			f = v
		case func(spi.Config, *zap.Logger) (spi.Uploader, error):
			f = v
		case spi.Uploader:
			f = func(spi.Config, *zap.Logger) (spi.Uploader, error) { return v, nil }
		}
		if f == nil {
			return nil, nil, bad("spi.UploaderFactory or spi.Uploader")
		}
		p := &UploaderPlugin{Factory: f, Log: log}
		return plugin.PluginSet{kind: p}, p.closeBackend, nil
	case spi.KindPacking:
		var f spi.PackingFactory
		switch v := impl.(type) {
		case spi.PackingFactory:
			f = v
		case func(spi.Config) (spi.Packing, error):
			f = v
		case spi.Packing:
			f = func(spi.Config) (spi.Packing, error) { return v, nil }
		}
		if f == nil {
			return nil, nil, bad("spi.PackingFactory or spi.Packing")
		}
		p := &PackingPlugin{Factory: f}
		return plugin.PluginSet{kind: p}, p.closeBackend, nil
	case spi.KindScheduler:
		var f spi.SchedulerFactory
		switch v := impl.(type) {
		case spi.SchedulerFactory:
			f = v
		case func(spi.Config, *zap.Logger) (spi.Scheduler, error):
			f = v
		case spi.Scheduler:
			f = func(spi.Config, *zap.Logger) (spi.Scheduler, error) { return v, nil }
		}
		if f == nil {
			return nil, nil, bad("spi.SchedulerFactory or spi.Scheduler")
		}
		p := &SchedulerPlugin{Factory: f, Log: log, Observer: o.observer}
		return plugin.PluginSet{kind: p}, p.closeBackend, nil
	case spi.KindMetricsSink:
		var f spi.MetricsSinkFactory
		switch v := impl.(type) {
		case spi.MetricsSinkFactory:
			f = v
		case func(spi.Config, *zap.Logger) (spi.MetricsSink, error):
			f = v
		case spi.MetricsSink:
			f = func(spi.Config, *zap.Logger) (spi.MetricsSink, error) { return v, nil }
		}
		if f == nil {
			return nil, nil, bad("spi.MetricsSinkFactory or spi.MetricsSink")
		}
		p := &MetricsSinkPlugin{Factory: f, Log: log}
		return plugin.PluginSet{kind: p}, p.closeBackend, nil
	case spi.KindCheckpointStorage:
		var f spi.CheckpointStorageFactory
		switch v := impl.(type) {
		case spi.CheckpointStorageFactory:
			f = v
		case func(spi.Config, *zap.Logger) (spi.CheckpointStorage, error):
			f = v
		case spi.CheckpointStorage:
			f = func(spi.Config, *zap.Logger) (spi.CheckpointStorage, error) { return v, nil }
		}
		if f == nil {
			return nil, nil, bad("spi.CheckpointStorageFactory or spi.CheckpointStorage")
		}
		p := &CheckpointStoragePlugin{Factory: f, Log: log}
		return plugin.PluginSet{kind: p}, p.closeBackend, nil
	}
	return nil, nil, fmt.Errorf("unknown plugin kind %q (want one of %v)", kind, spi.Kinds)
}

// watchParent exits the plugin when its parent process (the host) dies.
// On Linux the Loader also sets a parent-death signal; the watchdog covers
// other systems and hosts that are not a Loader.
func watchParent(log *zap.Logger) {
	if v := os.Getenv(EnvWatchParent); v == "false" || v == "0" {
		return
	}
	ppid := os.Getppid()
	if ppid <= 1 {
		return // started by init: nothing to watch
	}
	go func() {
		t := time.NewTicker(parentPoll)
		defer t.Stop()
		for range t.C {
			if os.Getppid() != ppid {
				log.Error("host process exited; plugin exits", zap.Int("host_pid", ppid))
				_ = log.Sync()
				os.Exit(3)
			}
		}
	}()
}
