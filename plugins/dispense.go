package plugins

import (
	"context"
	"fmt"
	"os"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/egret-stream/egret/core/spi"
)

// DispenseStateManager takes the state manager from a connected go-plugin
// client (a subprocess's or plugin.TestPluginGRPCConn's) and configures it
// with name and cfg. Closing the result closes the plugin's session but
// does not stop a subprocess: the owner of rpc does that. Loader does all
// of it.
func DispenseStateManager(ctx context.Context, rpc plugin.ClientProtocol, name string, cfg spi.Config) (spi.StateManager, error) {
	c, err := configured[*stateManagerClient](ctx, rpc, spi.KindStateManager, nil, name, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DispenseUploader is DispenseStateManager for an uploader.
func DispenseUploader(ctx context.Context, rpc plugin.ClientProtocol, name string, cfg spi.Config) (spi.Uploader, error) {
	c, err := configured[*uploaderClient](ctx, rpc, spi.KindUploader, nil, name, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DispensePacking is DispenseStateManager for a packing algorithm. The
// result implements io.Closer, and spi.Repacking when the plugin's
// algorithm does.
func DispensePacking(ctx context.Context, rpc plugin.ClientProtocol, name string, cfg spi.Config) (spi.Packing, error) {
	c, err := configured[*packingClient](ctx, rpc, spi.KindPacking, nil, name, cfg)
	if err != nil {
		return nil, err
	}
	return c.typed(), nil
}

// DispenseScheduler is DispenseStateManager for a scheduler. The result
// implements spi.Launcher and spi.Scalable exactly when the plugin's
// scheduler does.
func DispenseScheduler(ctx context.Context, rpc plugin.ClientProtocol, name string, cfg spi.Config) (spi.Scheduler, error) {
	c, err := configured[*schedulerClient](ctx, rpc, spi.KindScheduler, nil, name, cfg)
	if err != nil {
		return nil, err
	}
	return c.typed(), nil
}

// DispenseMetricsSink is DispenseStateManager for a metrics sink.
func DispenseMetricsSink(ctx context.Context, rpc plugin.ClientProtocol, name string, cfg spi.Config) (spi.MetricsSink, error) {
	c, err := configured[*metricsSinkClient](ctx, rpc, spi.KindMetricsSink, nil, name, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DispenseCheckpointStorage is DispenseStateManager for a checkpoint
// storage.
func DispenseCheckpointStorage(ctx context.Context, rpc plugin.ClientProtocol, name string, cfg spi.Config) (spi.CheckpointStorage, error) {
	c, err := configured[*checkpointStorageClient](ctx, rpc, spi.KindCheckpointStorage, nil, name, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// adapter is implemented by the host-side client of every kind.
type adapter interface {
	base() *client
	configure(ctx context.Context, name string, cfg spi.Config) error
}

func (c *client) base() *client { return c }

// configured takes kind's adapter from rpc, attaches proc to it and
// configures it with name and cfg.
func configured[T adapter](ctx context.Context, rpc plugin.ClientProtocol, kind string, proc *Process, name string, cfg spi.Config) (T, error) {
	c, err := dispense[T](rpc, kind, proc)
	if err == nil {
		err = c.configure(ctx, name, cfg)
	}
	return c, err
}

// dispense takes kind's adapter from rpc and attaches proc to it.
func dispense[T adapter](rpc plugin.ClientProtocol, kind string, proc *Process) (T, error) {
	var zero T
	raw, err := rpc.Dispense(kind)
	if err != nil {
		return zero, fmt.Errorf("dispense %s plugin: %w", kind, err)
	}
	c, ok := raw.(T)
	if !ok {
		return zero, fmt.Errorf("dispense %s plugin: got %T, want %T (the plugin set was not built by package plugins)", kind, raw, zero)
	}
	b := c.base()
	b.proc = proc
	if proc != nil && proc.sockDir != "" {
		// A plugin that dies leaves its socket behind: remove it as soon as
		// the process is gone, even if the host never calls Close.
		go func() {
			<-b.done.Done()
			_ = os.RemoveAll(proc.sockDir)
		}()
	}
	return c, nil
}
