package plugintest

import (
	"context"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
)

// Name is the backend name the in-process helpers configure.
const Name = "test"

// connect serves p in process and returns the host side of the connection;
// both ends are closed when the test ends.
func connect(t testing.TB, kind string, p goplugin.Plugin) goplugin.ClientProtocol {
	t.Helper()
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{kind: p})
	t.Cleanup(func() {
		// Stop first: client.Close asks the server to stop itself, and a
		// concurrent Stop races inside go-plugin.
		server.Stop()
		_ = client.Close()
	})
	return client
}

// StateManager serves the session built by f over an in-process gRPC
// connection and returns the host-side adapter, configured with cfg: every
// call goes through the real protocol without a subprocess. The session is
// closed when the test ends. Each call makes a new connection, so calling
// it with a factory of sessions of one store gives sessions of that store.
func StateManager(t testing.TB, f spi.StateManagerFactory, cfg spi.Config) spi.StateManager {
	t.Helper()
	rpc := connect(t, spi.KindStateManager, &plugins.StateManagerPlugin{Factory: f, Log: zaptest.NewLogger(t)})
	sm, err := plugins.DispenseStateManager(context.Background(), rpc, Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sm.Close() })
	return sm
}

// Uploader is StateManager for an uploader.
func Uploader(t testing.TB, f spi.UploaderFactory, cfg spi.Config) spi.Uploader {
	t.Helper()
	rpc := connect(t, spi.KindUploader, &plugins.UploaderPlugin{Factory: f, Log: zaptest.NewLogger(t)})
	u, err := plugins.DispenseUploader(context.Background(), rpc, Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.Close() })
	return u
}

// Packing is StateManager for a packing algorithm; the result implements
// spi.Repacking when f's algorithm does.
func Packing(t testing.TB, f spi.PackingFactory, cfg spi.Config) spi.Packing {
	t.Helper()
	rpc := connect(t, spi.KindPacking, &plugins.PackingPlugin{Factory: f})
	p, err := plugins.DispensePacking(context.Background(), rpc, Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// PackingFactory returns a factory whose algorithms are f's served over
// in-process gRPC connections; a factory error comes back as the error of
// Configure, as from a plugin. packingtest.Run takes it.
func PackingFactory(t testing.TB, f spi.PackingFactory) spi.PackingFactory {
	return func(cfg spi.Config) (spi.Packing, error) {
		rpc := connect(t, spi.KindPacking, &plugins.PackingPlugin{Factory: f})
		return plugins.DispensePacking(context.Background(), rpc, Name, cfg)
	}
}

// Scheduler is StateManager for a scheduler; the result implements
// spi.Launcher and spi.Scalable when f's scheduler does.
func Scheduler(t testing.TB, f spi.SchedulerFactory, cfg spi.Config) spi.Scheduler {
	t.Helper()
	rpc := connect(t, spi.KindScheduler, &plugins.SchedulerPlugin{Factory: f, Log: zaptest.NewLogger(t)})
	s, err := plugins.DispenseScheduler(context.Background(), rpc, Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// MetricsSink is StateManager for a metrics sink.
func MetricsSink(t testing.TB, f spi.MetricsSinkFactory, cfg spi.Config) spi.MetricsSink {
	t.Helper()
	rpc := connect(t, spi.KindMetricsSink, &plugins.MetricsSinkPlugin{Factory: f, Log: zaptest.NewLogger(t)})
	s, err := plugins.DispenseMetricsSink(context.Background(), rpc, Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// CheckpointStorage is StateManager for a checkpoint storage.
func CheckpointStorage(t testing.TB, f spi.CheckpointStorageFactory, cfg spi.Config) spi.CheckpointStorage {
	t.Helper()
	rpc := connect(t, spi.KindCheckpointStorage, &plugins.CheckpointStoragePlugin{Factory: f, Log: zaptest.NewLogger(t)})
	s, err := plugins.DispenseCheckpointStorage(context.Background(), rpc, Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
