package plugins

import (
	"context"

	plugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/proto/pluginpb"
)

// MetricsSinkPlugin is the go-plugin plugin of kind "metricssink". On the
// plugin side Factory builds the sink at Configure; on the host side it is
// nil.
type MetricsSinkPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Factory spi.MetricsSinkFactory
	// Log is passed to Factory; nil means no logging.
	Log *zap.Logger

	srv *metricsSinkServer
}

var _ plugin.GRPCPlugin = (*MetricsSinkPlugin)(nil)

// GRPCServer registers the MetricsSink service.
func (p *MetricsSinkPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	var create func(spi.Config, *zap.Logger) (spi.MetricsSink, error)
	if p.Factory != nil {
		create = p.Factory
	}
	p.srv = &metricsSinkServer{b: newBackend(spi.KindMetricsSink, p.Log, create)}
	pluginpb.RegisterMetricsSinkServer(s, p.srv)
	return nil
}

// GRPCClient returns the unconfigured host-side adapter; see
// DispenseMetricsSink.
func (p *MetricsSinkPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &metricsSinkClient{client: newClient(spi.KindMetricsSink, ctx), rpc: pluginpb.NewMetricsSinkClient(c)}, nil
}

func (p *MetricsSinkPlugin) closeBackend() error {
	if p.srv == nil {
		return nil
	}
	return p.srv.b.close(spi.MetricsSink.Close)
}

type metricsSinkServer struct {
	pluginpb.UnimplementedMetricsSinkServer
	b *backend[spi.MetricsSink]
}

func (s *metricsSinkServer) Configure(_ context.Context, req *pluginpb.ConfigureRequest) (*pluginpb.Empty, error) {
	return &pluginpb.Empty{}, s.b.configure(req)
}

func (s *metricsSinkServer) Report(ctx context.Context, req *pluginpb.ReportRequest) (*pluginpb.Empty, error) {
	m, err := s.b.get()
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(m.Report(ctx, req.GetBatch()))
}

func (s *metricsSinkServer) Close(context.Context, *pluginpb.Empty) (*pluginpb.Empty, error) {
	return &pluginpb.Empty{}, s.b.close(spi.MetricsSink.Close)
}

// metricsSinkClient is the host side of a metrics sink plugin.
type metricsSinkClient struct {
	client
	rpc pluginpb.MetricsSinkClient
}

var _ spi.MetricsSink = (*metricsSinkClient)(nil)

func (c *metricsSinkClient) configure(ctx context.Context, name string, cfg spi.Config) error {
	c.name = name
	_, err := c.rpc.Configure(ctx, configureRequest(name, cfg))
	return c.rpcErr(ctx, err)
}

func (c *metricsSinkClient) Report(ctx context.Context, batch []*egretpb.MetricsPublish) error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.rpc.Report(ctx, &pluginpb.ReportRequest{Batch: batch})
	return c.rpcErr(ctx, err)
}

// Close closes the plugin's sink and stops the plugin process when a
// Loader started it.
func (c *metricsSinkClient) Close() error {
	return c.shutdown(func(ctx context.Context, e *pluginpb.Empty) error {
		_, err := c.rpc.Close(ctx, e)
		return err
	})
}
