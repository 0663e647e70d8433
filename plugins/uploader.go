package plugins

import (
	"context"
	"fmt"
	"path/filepath"

	plugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/pluginpb"
)

// UploaderPlugin is the go-plugin plugin of kind "uploader". On the plugin
// side Factory builds the uploader at Configure; on the host side it is
// nil.
type UploaderPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Factory spi.UploaderFactory
	// Log is passed to Factory; nil means no logging.
	Log *zap.Logger

	srv *uploaderServer
}

var _ plugin.GRPCPlugin = (*UploaderPlugin)(nil)

// GRPCServer registers the Uploader service.
func (p *UploaderPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	var create func(spi.Config, *zap.Logger) (spi.Uploader, error)
	if p.Factory != nil {
		create = p.Factory
	}
	p.srv = &uploaderServer{b: newBackend(spi.KindUploader, p.Log, create)}
	pluginpb.RegisterUploaderServer(s, p.srv)
	return nil
}

// GRPCClient returns the unconfigured host-side adapter; see
// DispenseUploader.
func (p *UploaderPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &uploaderClient{client: newClient(spi.KindUploader, ctx), rpc: pluginpb.NewUploaderClient(c)}, nil
}

func (p *UploaderPlugin) closeBackend() error {
	if p.srv == nil {
		return nil
	}
	return p.srv.b.close(spi.Uploader.Close)
}

type uploaderServer struct {
	pluginpb.UnimplementedUploaderServer
	b *backend[spi.Uploader]
}

func (s *uploaderServer) Configure(_ context.Context, req *pluginpb.ConfigureRequest) (*pluginpb.Empty, error) {
	return &pluginpb.Empty{}, s.b.configure(req)
}

func (s *uploaderServer) Upload(ctx context.Context, req *pluginpb.UploadRequest) (*pluginpb.UploadReply, error) {
	u, err := s.b.get()
	if err != nil {
		return nil, err
	}
	uri, err := u.Upload(ctx, spi.Package{
		Topology: req.GetTopology(), Role: req.GetRole(), Cluster: req.GetCluster(),
		Path: req.GetPath(), SHA256: req.GetSha256(),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &pluginpb.UploadReply{Uri: uri}, nil
}

func (s *uploaderServer) Undo(ctx context.Context, req *pluginpb.UndoRequest) (*pluginpb.Empty, error) {
	u, err := s.b.get()
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(u.Undo(ctx, req.GetUri()))
}

func (s *uploaderServer) Close(context.Context, *pluginpb.Empty) (*pluginpb.Empty, error) {
	return &pluginpb.Empty{}, s.b.close(spi.Uploader.Close)
}

// uploaderClient is the host side of an uploader plugin.
type uploaderClient struct {
	client
	rpc pluginpb.UploaderClient
}

var _ spi.Uploader = (*uploaderClient)(nil)

func (c *uploaderClient) configure(ctx context.Context, name string, cfg spi.Config) error {
	c.name = name
	_, err := c.rpc.Configure(ctx, configureRequest(name, cfg))
	return c.rpcErr(ctx, err)
}

// Upload hands the plugin the package's path, made absolute: host and
// plugin share the filesystem, the file is not streamed.
func (c *uploaderClient) Upload(ctx context.Context, pkg spi.Package) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	path := pkg.Path
	if path != "" && !filepath.IsAbs(path) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", fmt.Errorf("upload %s: %w", path, err)
		}
		path = abs
	}
	r, err := c.rpc.Upload(ctx, &pluginpb.UploadRequest{
		Topology: pkg.Topology, Role: pkg.Role, Cluster: pkg.Cluster, Path: path, Sha256: pkg.SHA256,
	})
	if err != nil {
		return "", c.rpcErr(ctx, err)
	}
	return r.GetUri(), nil
}

func (c *uploaderClient) Undo(ctx context.Context, uri string) error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.rpc.Undo(ctx, &pluginpb.UndoRequest{Uri: uri})
	return c.rpcErr(ctx, err)
}

// Close closes the plugin's uploader and stops the plugin process when a
// Loader started it.
func (c *uploaderClient) Close() error {
	return c.shutdown(func(ctx context.Context, e *pluginpb.Empty) error {
		_, err := c.rpc.Close(ctx, e)
		return err
	})
}
