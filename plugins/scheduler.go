package plugins

import (
	"context"
	"fmt"
	"math"

	plugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/proto/pluginpb"
)

// SchedulerPlugin is the go-plugin plugin of kind "scheduler". On the plugin
// side Factory builds the scheduler at Configure; on the host side it is
// nil. The host-side value implements spi.Launcher and spi.Scalable only
// when the plugin's scheduler does.
type SchedulerPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Factory spi.SchedulerFactory
	// Log is passed to Factory; nil means no logging.
	Log *zap.Logger
	// Observer, when set on the plugin side, also serves the
	// SchedulerObserver service (see WithObserver).
	Observer ObserverFactory

	srv *schedulerServer
}

var _ plugin.GRPCPlugin = (*SchedulerPlugin)(nil)

// GRPCServer registers the Scheduler service.
func (p *SchedulerPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	var create func(spi.Config, *zap.Logger) (spi.Scheduler, error)
	if p.Factory != nil {
		create = p.Factory
	}
	p.srv = &schedulerServer{b: newBackend(spi.KindScheduler, p.Log, create)}
	pluginpb.RegisterSchedulerServer(s, p.srv)
	if p.Observer != nil {
		p.srv.observer = registerObserver(s, p.Observer, p.Log)
	}
	return nil
}

// GRPCClient returns the unconfigured host-side adapter; see
// DispenseScheduler.
func (p *SchedulerPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &schedulerClient{client: newClient(spi.KindScheduler, ctx), rpc: pluginpb.NewSchedulerClient(c), conn: c}, nil
}

func (p *SchedulerPlugin) closeBackend() error {
	if p.srv == nil {
		return nil
	}
	return p.srv.b.close(spi.Scheduler.Close)
}

type schedulerServer struct {
	pluginpb.UnimplementedSchedulerServer
	b *backend[spi.Scheduler]
	// observer is the SchedulerObserver service, or nil.
	observer *observerServer
}

func (s *schedulerServer) Configure(_ context.Context, req *pluginpb.ConfigureRequest) (*pluginpb.Empty, error) {
	if err := s.b.configure(req); err != nil {
		return nil, err
	}
	if s.observer != nil {
		s.observer.configure(req.GetName(), spi.Config(req.GetConfig()))
	}
	return &pluginpb.Empty{}, nil
}

func (s *schedulerServer) Capabilities(context.Context, *pluginpb.Empty) (*pluginpb.SchedulerCapabilities, error) {
	sc, err := s.b.get()
	if err != nil {
		return nil, err
	}
	_, launch := sc.(spi.Launcher)
	_, scale := sc.(spi.Scalable)
	return &pluginpb.SchedulerCapabilities{Launch: launch, Scale: scale}, nil
}

func (s *schedulerServer) Schedule(ctx context.Context, req *pluginpb.Job) (*pluginpb.Empty, error) {
	sc, err := s.b.get()
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(sc.Schedule(ctx, jobFromProto(req)))
}

func (s *schedulerServer) Kill(ctx context.Context, req *pluginpb.TopologyRequest) (*pluginpb.Empty, error) {
	sc, err := s.b.get()
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(sc.Kill(ctx, req.GetTopology()))
}

func (s *schedulerServer) Restart(ctx context.Context, req *pluginpb.RestartRequest) (*pluginpb.Empty, error) {
	sc, err := s.b.get()
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(sc.Restart(ctx, req.GetTopology(), int(req.GetContainer())))
}

func (s *schedulerServer) Update(ctx context.Context, req *pluginpb.Job) (*pluginpb.Empty, error) {
	sc, err := s.b.get()
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(sc.Update(ctx, jobFromProto(req)))
}

func (s *schedulerServer) JobLinks(ctx context.Context, req *pluginpb.TopologyRequest) (*pluginpb.JobLinksReply, error) {
	sc, err := s.b.get()
	if err != nil {
		return nil, err
	}
	links, err := sc.JobLinks(ctx, req.GetTopology())
	if err != nil {
		return nil, toStatus(err)
	}
	return &pluginpb.JobLinksReply{Links: links}, nil
}

func (s *schedulerServer) Launch(ctx context.Context, req *pluginpb.Job) (*pluginpb.Empty, error) {
	sc, err := s.b.get()
	if err != nil {
		return nil, err
	}
	l, ok := sc.(spi.Launcher)
	if !ok {
		return nil, errorf("launch: this scheduler has no launcher (library mode): %w", spi.ErrUnsupported)
	}
	return &pluginpb.Empty{}, toStatus(l.Launch(ctx, jobFromProto(req)))
}

func (s *schedulerServer) AddContainers(ctx context.Context, req *pluginpb.ContainersRequest) (*pluginpb.Empty, error) {
	return s.scale(ctx, req, spi.Scalable.AddContainers)
}

func (s *schedulerServer) RemoveContainers(ctx context.Context, req *pluginpb.ContainersRequest) (*pluginpb.Empty, error) {
	return s.scale(ctx, req, spi.Scalable.RemoveContainers)
}

func (s *schedulerServer) scale(ctx context.Context, req *pluginpb.ContainersRequest, f func(spi.Scalable, context.Context, string, []plan.Container) error) (*pluginpb.Empty, error) {
	sc, err := s.b.get()
	if err != nil {
		return nil, err
	}
	scalable, ok := sc.(spi.Scalable)
	if !ok {
		return nil, errorf("this scheduler cannot add or remove containers of a running topology: %w", spi.ErrUnsupported)
	}
	containers := plan.FromProto(&egretpb.PackingPlan{Containers: req.GetContainers()}).Containers
	return &pluginpb.Empty{}, toStatus(f(scalable, ctx, req.GetTopology(), containers))
}

func (s *schedulerServer) Close(context.Context, *pluginpb.Empty) (*pluginpb.Empty, error) {
	return &pluginpb.Empty{}, s.b.close(spi.Scheduler.Close)
}

func jobToProto(j spi.Job) *pluginpb.Job {
	pb := &pluginpb.Job{
		Topology: j.Topology, TopologyId: j.TopologyID, Cluster: j.Cluster, Role: j.Role, Environ: j.Environ,
		PackageUri: j.PackageURI, PackageSha256: j.PackageSHA256, Config: j.Config.Clone(),
	}
	if j.Plan != nil {
		pb.Plan = j.Plan.ToProto()
	}
	return pb
}

func jobFromProto(pb *pluginpb.Job) spi.Job {
	j := spi.Job{
		Topology: pb.GetTopology(), TopologyID: pb.GetTopologyId(), Cluster: pb.GetCluster(), Role: pb.GetRole(),
		Environ: pb.GetEnviron(), PackageURI: pb.GetPackageUri(), PackageSHA256: pb.GetPackageSha256(),
		Config: spi.Config(pb.GetConfig()),
	}
	if j.Config == nil {
		j.Config = spi.Config{}
	}
	if pb.GetPlan() != nil {
		j.Plan = plan.FromProto(pb.GetPlan())
	}
	return j
}

// schedulerClient is the host side of a scheduler plugin. It implements
// spi.Scheduler; typed wraps it in a type that also implements
// spi.Launcher and/or spi.Scalable, as the plugin reported.
type schedulerClient struct {
	client
	rpc          pluginpb.SchedulerClient
	conn         *grpc.ClientConn
	launch, scal bool
}

var _ spi.Scheduler = (*schedulerClient)(nil)

func (c *schedulerClient) configure(ctx context.Context, name string, cfg spi.Config) error {
	c.name = name
	if _, err := c.rpc.Configure(ctx, configureRequest(name, cfg)); err != nil {
		return c.rpcErr(ctx, err)
	}
	caps, err := c.rpc.Capabilities(ctx, &pluginpb.Empty{})
	if err != nil {
		return c.rpcErr(ctx, err)
	}
	c.launch, c.scal = caps.GetLaunch(), caps.GetScale()
	return nil
}

// typed returns the value the host uses.
func (c *schedulerClient) typed() spi.Scheduler {
	switch {
	case c.launch && c.scal:
		return launchingScalableScheduler{c}
	case c.launch:
		return launchingScheduler{c}
	case c.scal:
		return scalableScheduler{c}
	}
	return c
}

func (c *schedulerClient) Schedule(ctx context.Context, job spi.Job) error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.rpc.Schedule(ctx, jobToProto(job))
	return c.rpcErr(ctx, err)
}

func (c *schedulerClient) Kill(ctx context.Context, topology string) error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.rpc.Kill(ctx, &pluginpb.TopologyRequest{Topology: topology})
	return c.rpcErr(ctx, err)
}

func (c *schedulerClient) Restart(ctx context.Context, topology string, container int) error {
	if err := c.check(); err != nil {
		return err
	}
	if container < math.MinInt32 || container > math.MaxInt32 {
		return fmt.Errorf("restart %s: container %d is out of range", topology, container)
	}
	_, err := c.rpc.Restart(ctx, &pluginpb.RestartRequest{Topology: topology, Container: int32(container)})
	return c.rpcErr(ctx, err)
}

func (c *schedulerClient) Update(ctx context.Context, job spi.Job) error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.rpc.Update(ctx, jobToProto(job))
	return c.rpcErr(ctx, err)
}

func (c *schedulerClient) JobLinks(ctx context.Context, topology string) ([]string, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	r, err := c.rpc.JobLinks(ctx, &pluginpb.TopologyRequest{Topology: topology})
	if err != nil {
		return nil, c.rpcErr(ctx, err)
	}
	return r.GetLinks(), nil
}

// Close closes the plugin's scheduler (the topology keeps running) and
// stops the plugin process when a Loader started it.
func (c *schedulerClient) Close() error {
	return c.shutdown(func(ctx context.Context, e *pluginpb.Empty) error {
		_, err := c.rpc.Close(ctx, e)
		return err
	})
}

func (c *schedulerClient) doLaunch(ctx context.Context, job spi.Job) error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.rpc.Launch(ctx, jobToProto(job))
	return c.rpcErr(ctx, err)
}

func (c *schedulerClient) doScale(ctx context.Context, topology string, containers []plan.Container, add bool) error {
	if err := c.check(); err != nil {
		return err
	}
	req := &pluginpb.ContainersRequest{
		Topology:   topology,
		Containers: (&plan.PackingPlan{Containers: containers}).ToProto().GetContainers(),
	}
	var err error
	if add {
		_, err = c.rpc.AddContainers(ctx, req)
	} else {
		_, err = c.rpc.RemoveContainers(ctx, req)
	}
	return c.rpcErr(ctx, err)
}

// launchingScheduler is a scheduler plugin that implements spi.Launcher.
type launchingScheduler struct{ *schedulerClient }

func (s launchingScheduler) Launch(ctx context.Context, job spi.Job) error {
	return s.doLaunch(ctx, job)
}

// scalableScheduler is a scheduler plugin that implements spi.Scalable.
type scalableScheduler struct{ *schedulerClient }

func (s scalableScheduler) AddContainers(ctx context.Context, topology string, containers []plan.Container) error {
	return s.doScale(ctx, topology, containers, true)
}

func (s scalableScheduler) RemoveContainers(ctx context.Context, topology string, containers []plan.Container) error {
	return s.doScale(ctx, topology, containers, false)
}

// launchingScalableScheduler implements both spi.Launcher and
// spi.Scalable.
type launchingScalableScheduler struct{ *schedulerClient }

func (s launchingScalableScheduler) Launch(ctx context.Context, job spi.Job) error {
	return s.doLaunch(ctx, job)
}

func (s launchingScalableScheduler) AddContainers(ctx context.Context, topology string, containers []plan.Container) error {
	return s.doScale(ctx, topology, containers, true)
}

func (s launchingScalableScheduler) RemoveContainers(ctx context.Context, topology string, containers []plan.Container) error {
	return s.doScale(ctx, topology, containers, false)
}

var (
	_ spi.Launcher = launchingScheduler{}
	_ spi.Scalable = scalableScheduler{}
	_ spi.Launcher = launchingScalableScheduler{}
	_ spi.Scalable = launchingScalableScheduler{}
)
