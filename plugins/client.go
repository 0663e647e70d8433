package plugins

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/pluginpb"
)

const (
	// closeTimeout bounds the Close call to a plugin.
	closeTimeout = 30 * time.Second
	// exitWait is how long a failed call waits for go-plugin to notice that
	// the plugin process exited, to tell a crash from a network error.
	exitWait = 2 * time.Second
)

// Process is a running plugin process started by a Loader.
type Process struct {
	// Kind and Name are the plugin's kind and backend name.
	Kind, Name string
	// Path is the plugin binary.
	Path string
	// Pid is the plugin process id.
	Pid int

	client *plugin.Client
	// sockDir holds the plugin's Unix socket; removed by Kill, as a
	// killed plugin leaves its socket behind.
	sockDir string
	forget  func()
}

// Exited reports whether the plugin process has exited.
func (p *Process) Exited() bool { return p.client.Exited() }

// Kill stops the plugin process: it asks the plugin to exit and kills it
// after two seconds. Kill is idempotent and blocks until the process is
// gone. Calls on the plugin's value fail with spi.ErrPluginExited afterwards.
func (p *Process) Kill() {
	p.client.Kill()
	if p.sockDir != "" {
		_ = os.RemoveAll(p.sockDir)
	}
	if p.forget != nil {
		p.forget()
	}
}

// ProcessOf returns the plugin process behind a value returned by a Loader,
// or false for a built-in implementation.
func ProcessOf(v any) (*Process, bool) {
	h, ok := v.(interface{ pluginProcess() *Process })
	if !ok || h.pluginProcess() == nil {
		return nil, false
	}
	return h.pluginProcess(), true
}

// client is the part shared by the host-side adapters of every kind.
type client struct {
	kind string
	// name is the backend name given to Configure.
	name string
	// done ends when the plugin process exits (go-plugin's doneCtx); it
	// never ends for an in-process connection.
	done context.Context
	// proc is the plugin process when a Loader started it.
	proc *Process

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

func newClient(kind string, done context.Context) client {
	if done == nil {
		done = context.Background()
	}
	return client{kind: kind, done: done}
}

func (c *client) pluginProcess() *Process { return c.proc }

func (c *client) label() string { return fmt.Sprintf("%s plugin %q", c.kind, c.name) }

// exitedErr is the error of a call to a plugin whose process is gone.
func (c *client) exitedErr() error {
	if c.proc != nil {
		return fmt.Errorf("%s (%s, pid %d): %w; its log above says why", c.label(), c.proc.Path, c.proc.Pid, spi.ErrPluginExited)
	}
	return fmt.Errorf("%s: %w", c.label(), spi.ErrPluginExited)
}

func (c *client) exited() bool { return c.done.Err() != nil }

// check fails a call made after Close or after the plugin exited.
func (c *client) check() error {
	if c.closed.Load() {
		return fmt.Errorf("%s: %w", c.label(), spi.ErrClosed)
	}
	if c.exited() {
		return c.exitedErr()
	}
	return nil
}

// rpcErr converts the error of a gRPC call made with ctx. An error the
// plugin returned keeps its message and sentinels; a call that failed
// because ctx ended wraps ctx.Err(); a call that failed because the plugin
// died wraps spi.ErrPluginExited.
func (c *client) rpcErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", c.label(), err)
	}
	if e := fromDetail(st); e != nil {
		return e
	}
	if ctx.Err() != nil && (st.Code() == codes.Canceled || st.Code() == codes.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", c.label(), ctx.Err())
	}
	switch st.Code() {
	case codes.Unavailable, codes.Canceled, codes.Internal:
		if c.waitExited() {
			return c.exitedErr()
		}
	case codes.FailedPrecondition, codes.Unimplemented:
		return fmt.Errorf("%s: %s", c.label(), st.Message())
	}
	return fmt.Errorf("%s: %w", c.label(), err)
}

// waitExited reports whether the plugin process exits within exitWait.
func (c *client) waitExited() bool {
	if c.exited() {
		return true
	}
	if c.proc == nil {
		return false
	}
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-c.done.Done():
		return true
	case <-t.C:
		return false
	}
}

// shutdown runs the plugin's Close once, then kills the plugin process
// when a Loader started it. Later calls return the first result.
func (c *client) shutdown(closeRPC func(context.Context, *pluginpb.Empty) error) error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		if !c.exited() {
			ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			if err := closeRPC(ctx, &pluginpb.Empty{}); err != nil && !c.exited() {
				c.closeErr = fmt.Errorf("close %s: %w", c.label(), c.rpcErr(ctx, err))
			}
			cancel()
		}
		if c.proc != nil {
			c.proc.Kill()
		}
	})
	return c.closeErr
}

// configureRequest builds the request of Configure.
func configureRequest(name string, cfg spi.Config) *pluginpb.ConfigureRequest {
	return &pluginpb.ConfigureRequest{Name: name, Config: cfg.Clone()}
}
