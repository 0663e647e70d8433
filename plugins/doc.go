// Package plugins runs Egret's SPI implementations (state managers,
// uploaders, packing algorithms, schedulers, metrics sinks and checkpoint
// storages) as external plugin binaries
// over hashicorp/go-plugin, and loads either a built-in implementation or a
// plugin binary by name.
//
// A plugin binary is named egret-<kind>-<name> (kind is one of statemgr,
// uploader, packing, scheduler, metricssink, checkpointstorage) and its main is a single call:
//
//	func main() { plugins.ServeScheduler(myscheduler.New) }
//
// The host side is a Loader:
//
//	l := plugins.NewLoader(pluginDir, log)
//	defer l.Close()
//	sched, err := l.LoadScheduler(ctx, "example", cfg)
//
// The protocol is gRPC only (package proto/pluginpb), with go-plugin's
// versioned handshake and automatic mutual TLS. Sentinel errors of package
// spi survive the boundary (errors.Is works on the host), a dead plugin
// gives an error wrapping spi.ErrPluginExited, and a plugin never outlives its
// host. See README.md in this directory.
package plugins
