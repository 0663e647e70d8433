package plugins

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/pluginpb"
)

// Observer looks at a resource manager directly and tells which containers
// of a topology run there: container id → an identity that changes when
// the container is replaced (a pid, an allocation id), an empty map when
// none run. It is what the scheduler conformance suite
// (schedulertest.Harness.Containers) checks a scheduler against. It must
// not ask the scheduler: it asks the cluster manager.
type Observer interface {
	Containers(ctx context.Context, topology string) (map[int]string, error)
}

// ObserverFactory builds an Observer from the config the scheduler plugin
// is configured with.
type ObserverFactory func(cfg spi.Config, log *zap.Logger) (Observer, error)

// ServeOption adds an optional service to a plugin served by Serve.
type ServeOption func(*serveOptions)

type serveOptions struct {
	observer     ObserverFactory
	keys         []spi.Key // see WithKeys
	keysDeclared bool
}

// WithObserver makes a scheduler plugin also serve the SchedulerObserver
// service, built by f from the scheduler's config, so that `egret plugin
// verify` can run the scheduler conformance suite against it. The host
// never uses it to run topologies.
func WithObserver(f ObserverFactory) ServeOption {
	return func(o *serveOptions) { o.observer = f }
}

// observerServer is the plugin side of the SchedulerObserver service. It
// builds the observer when the Scheduler service is configured.
type observerServer struct {
	pluginpb.UnimplementedSchedulerObserverServer
	factory ObserverFactory
	log     *zap.Logger

	mu       sync.Mutex
	observer Observer
	err      error
}

func registerObserver(s *grpc.Server, f ObserverFactory, log *zap.Logger) *observerServer {
	if log == nil {
		log = zap.NewNop()
	}
	o := &observerServer{factory: f, log: log}
	pluginpb.RegisterSchedulerObserverServer(s, o)
	return o
}

// configure builds the observer from the scheduler's config; an error is
// returned by every later Containers call.
func (o *observerServer) configure(name string, cfg spi.Config) {
	ob, err := o.factory(cfg, o.log.Named("observer"))
	if err == nil && ob == nil {
		err = fmt.Errorf("the observer factory returned nil")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.err = fmt.Errorf("scheduler plugin %q: observer: %w", name, err)
	}
	o.observer = ob
}

func (o *observerServer) Containers(ctx context.Context, req *pluginpb.TopologyRequest) (*pluginpb.ContainersReply, error) {
	o.mu.Lock()
	ob, err := o.observer, o.err
	o.mu.Unlock()
	if err != nil {
		return nil, toStatus(err)
	}
	if ob == nil {
		return nil, notConfigured("scheduler observer")
	}
	got, err := ob.Containers(ctx, req.GetTopology())
	if err != nil {
		return nil, toStatus(err)
	}
	out := make(map[int32]string, len(got))
	for id, v := range got {
		out[int32(id)] = v
	}
	return &pluginpb.ContainersReply{Containers: out}, nil
}

// ObserverOf returns the observer served by the scheduler plugin behind s
// (see WithObserver), or false when s is not a plugin. A plugin that serves
// no observer gives an Observer whose calls fail with an error wrapping
// spi.ErrUnsupported.
func ObserverOf(s spi.Scheduler) (Observer, bool) {
	h, ok := s.(interface{ observer() Observer })
	if !ok {
		return nil, false
	}
	return h.observer(), true
}

// hostObserver is the host side of the SchedulerObserver service.
type hostObserver struct {
	c   *schedulerClient
	rpc pluginpb.SchedulerObserverClient
}

func (c *schedulerClient) observer() Observer {
	return hostObserver{c: c, rpc: pluginpb.NewSchedulerObserverClient(c.conn)}
}

func (o hostObserver) Containers(ctx context.Context, topology string) (map[int]string, error) {
	if err := o.c.check(); err != nil {
		return nil, err
	}
	r, err := o.rpc.Containers(ctx, &pluginpb.TopologyRequest{Topology: topology})
	if err != nil {
		if st, ok := status.FromError(err); ok && st.Code() == codes.Unimplemented && fromDetail(st) == nil {
			return nil, fmt.Errorf("%s serves no observer (serve it with plugins.WithObserver): %w", o.c.label(), spi.ErrUnsupported)
		}
		return nil, o.c.rpcErr(ctx, err)
	}
	out := make(map[int]string, len(r.GetContainers()))
	for id, v := range r.GetContainers() {
		out[int(id)] = v
	}
	return out, nil
}
