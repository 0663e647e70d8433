package plugins

import (
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/pluginpb"
)

// backend holds the plugin-side implementation created by Configure.
type backend[T any] struct {
	kind   string
	log    *zap.Logger
	create func(cfg spi.Config, log *zap.Logger) (T, error)

	mu         sync.Mutex
	impl       T
	configured bool
	closed     bool
}

func newBackend[T any](kind string, log *zap.Logger, create func(spi.Config, *zap.Logger) (T, error)) *backend[T] {
	if log == nil {
		log = zap.NewNop()
	}
	return &backend[T]{kind: kind, log: log, create: create}
}

// configure builds the implementation; it may be called once.
func (b *backend[T]) configure(req *pluginpb.ConfigureRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.configured {
		return errorf("%s plugin %q: Configure called twice", b.kind, req.GetName())
	}
	if b.create == nil {
		return errorf("%s plugin %q: this side of the plugin has no implementation (a host-side plugin set was served)", b.kind, req.GetName())
	}
	impl, err := b.create(spi.Config(req.GetConfig()), b.log)
	if err != nil {
		return toStatus(fmt.Errorf("%s plugin %q: %w", b.kind, req.GetName(), err))
	}
	b.impl, b.configured = impl, true
	b.log.Debug("plugin configured")
	return nil
}

// get returns the implementation, or a status error before Configure.
func (b *backend[T]) get() (T, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.configured {
		var zero T
		return zero, notConfigured(b.kind)
	}
	return b.impl, nil
}

// close closes the implementation once with closeFn; the serve loop calls
// it too when the host ends the plugin without Close.
func (b *backend[T]) close(closeFn func(T) error) error {
	b.mu.Lock()
	if !b.configured || b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	impl := b.impl
	b.mu.Unlock()
	return toStatus(closeFn(impl))
}
