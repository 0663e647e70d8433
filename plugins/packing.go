package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	plugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/proto/pluginpb"
)

// PackingPlugin is the go-plugin plugin of kind "packing". On the plugin
// side Factory builds the algorithm at Configure; on the host side it is
// nil. The host-side value implements spi.Repacking only when the plugin's
// algorithm does.
type PackingPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Factory spi.PackingFactory

	srv *packingServer
}

var _ plugin.GRPCPlugin = (*PackingPlugin)(nil)

// GRPCServer registers the Packing service.
func (p *PackingPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	var create func(spi.Config, *zap.Logger) (spi.Packing, error)
	if p.Factory != nil {
		create = func(cfg spi.Config, _ *zap.Logger) (spi.Packing, error) { return p.Factory(cfg) }
	}
	p.srv = &packingServer{b: newBackend(spi.KindPacking, nil, create)}
	pluginpb.RegisterPackingServer(s, p.srv)
	return nil
}

// GRPCClient returns the unconfigured host-side adapter; see
// DispensePacking.
func (p *PackingPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &packingClient{client: newClient(spi.KindPacking, ctx), rpc: pluginpb.NewPackingClient(c)}, nil
}

func (p *PackingPlugin) closeBackend() error {
	if p.srv == nil {
		return nil
	}
	return p.srv.b.close(closePacking)
}

// closePacking closes an algorithm that holds resources (an io.Closer).
func closePacking(p spi.Packing) error {
	if c, ok := p.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type packingServer struct {
	pluginpb.UnimplementedPackingServer
	b *backend[spi.Packing]
}

func (s *packingServer) Configure(_ context.Context, req *pluginpb.ConfigureRequest) (*pluginpb.Empty, error) {
	return &pluginpb.Empty{}, s.b.configure(req)
}

func (s *packingServer) Capabilities(context.Context, *pluginpb.Empty) (*pluginpb.PackingCapabilities, error) {
	p, err := s.b.get()
	if err != nil {
		return nil, err
	}
	_, repack := p.(spi.Repacking)
	return &pluginpb.PackingCapabilities{Repack: repack}, nil
}

func (s *packingServer) Pack(_ context.Context, req *pluginpb.PackRequest) (*pluginpb.PlanReply, error) {
	p, err := s.b.get()
	if err != nil {
		return nil, err
	}
	t, err := topologyFromProto(req.GetTopology())
	if err != nil {
		return nil, toStatus(err)
	}
	pp, err := p.Pack(t)
	if err != nil {
		return nil, toStatus(err)
	}
	return planReply(pp)
}

func (s *packingServer) Repack(_ context.Context, req *pluginpb.RepackRequest) (*pluginpb.PlanReply, error) {
	p, err := s.b.get()
	if err != nil {
		return nil, err
	}
	rp, ok := p.(spi.Repacking)
	if !ok {
		return nil, toStatus(fmt.Errorf("repack: this packing algorithm cannot repack: %w", spi.ErrUnsupported))
	}
	t, err := topologyFromProto(req.GetTopology())
	if err != nil {
		return nil, toStatus(err)
	}
	var current *plan.PackingPlan
	if req.GetCurrent() != nil {
		current = plan.FromProto(req.GetCurrent())
	}
	parallelism := make(map[string]int, len(req.GetParallelism()))
	for k, v := range req.GetParallelism() {
		parallelism[k] = int(v)
	}
	pp, err := rp.Repack(t, current, parallelism, int(req.GetContainers()))
	if err != nil {
		return nil, toStatus(err)
	}
	return planReply(pp)
}

func (s *packingServer) Close(context.Context, *pluginpb.Empty) (*pluginpb.Empty, error) {
	return &pluginpb.Empty{}, s.b.close(closePacking)
}

func topologyFromProto(pb *egretpb.Topology) (*topology.Topology, error) {
	if pb == nil {
		return nil, errors.New("the request holds no topology")
	}
	return topology.FromProto(pb)
}

func planReply(pp *plan.PackingPlan) (*pluginpb.PlanReply, error) {
	if pp == nil {
		return nil, errorf("the packing algorithm returned no plan and no error")
	}
	return &pluginpb.PlanReply{Plan: pp.ToProto()}, nil
}

// packingClient is the host side of a packing plugin. It implements
// spi.Packing and io.Closer; repackingClient adds spi.Repacking.
type packingClient struct {
	client
	rpc    pluginpb.PackingClient
	repack bool
}

var _ spi.Packing = (*packingClient)(nil)

func (c *packingClient) configure(ctx context.Context, name string, cfg spi.Config) error {
	c.name = name
	if _, err := c.rpc.Configure(ctx, configureRequest(name, cfg)); err != nil {
		return c.rpcErr(ctx, err)
	}
	caps, err := c.rpc.Capabilities(ctx, &pluginpb.Empty{})
	if err != nil {
		return c.rpcErr(ctx, err)
	}
	c.repack = caps.GetRepack()
	return nil
}

// typed returns the value the host uses: c, or a repackingClient.
func (c *packingClient) typed() spi.Packing {
	if c.repack {
		return &repackingClient{c}
	}
	return c
}

// Pack asks the plugin to pack t. spi.Packing has no context: the call
// lasts until the plugin answers, exits or is closed.
func (c *packingClient) Pack(t *topology.Topology) (*plan.PackingPlan, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if t == nil {
		return nil, errors.New("pack: topology is nil")
	}
	ctx := context.Background()
	r, err := c.rpc.Pack(ctx, &pluginpb.PackRequest{Topology: topology.ToProto(t)})
	if err != nil {
		return nil, c.rpcErr(ctx, err)
	}
	return plan.FromProto(r.GetPlan()), nil
}

// Close closes the plugin's algorithm and stops the plugin process when a
// Loader started it.
func (c *packingClient) Close() error {
	return c.shutdown(func(ctx context.Context, e *pluginpb.Empty) error {
		_, err := c.rpc.Close(ctx, e)
		return err
	})
}

// repackingClient is a packingClient whose plugin implements
// spi.Repacking.
type repackingClient struct{ *packingClient }

var _ spi.Repacking = (*repackingClient)(nil)

// Repack asks the plugin to repack.
func (c *repackingClient) Repack(t *topology.Topology, current *plan.PackingPlan, parallelism map[string]int, containers int) (*plan.PackingPlan, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if t == nil {
		return nil, errors.New("repack: topology is nil")
	}
	req := &pluginpb.RepackRequest{Topology: topology.ToProto(t), Parallelism: make(map[string]int32, len(parallelism))}
	if current != nil {
		req.Current = current.ToProto()
	}
	for k, v := range parallelism {
		if v < math.MinInt32 || v > math.MaxInt32 {
			return nil, fmt.Errorf("repack: parallelism %d of %q is out of range", v, k)
		}
		req.Parallelism[k] = int32(v)
	}
	if containers < math.MinInt32 || containers > math.MaxInt32 {
		return nil, fmt.Errorf("repack: container count %d is out of range", containers)
	}
	req.Containers = int32(containers)
	ctx := context.Background()
	r, err := c.rpc.Repack(ctx, req)
	if err != nil {
		return nil, c.rpcErr(ctx, err)
	}
	return plan.FromProto(r.GetPlan()), nil
}
