package plugins

import (
	"context"
	"fmt"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/pluginpb"
)

// WithKeys makes a plugin declare the config keys it reads, as a built-in
// backend does when it registers: the host then checks, defaults and
// documents them (conf.LoadOptions.PluginKeys). Key.Check runs in the
// plugin only: the host checks the type, enum and required-ness.
// ServeBuiltin declares the built-in's registered keys itself.
func WithKeys(keys ...spi.Key) ServeOption {
	return func(o *serveOptions) { o.keys, o.keysDeclared = keys, true }
}

// configKeysName is the entry of the optional ConfigKeys service in a
// plugin's plugin set; the host reaches it on the plugin's connection
// (Loader.Keys), never by dispensing it.
const configKeysName = "configkeys"

type configKeysPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	pluginpb.UnimplementedConfigKeysServer
	keys []*pluginpb.ConfigKey
}

func newConfigKeysPlugin(keys []spi.Key) (*configKeysPlugin, error) {
	p := &configKeysPlugin{}
	for _, k := range keys {
		if err := k.Validate(); err != nil {
			return nil, err
		}
		p.keys = append(p.keys, &pluginpb.ConfigKey{Name: k.Name, Type: k.Type.String(), Default: k.Default,
			Required: k.Required, Enum: k.Enum, Doc: k.Doc})
	}
	return p, nil
}

func (p *configKeysPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterConfigKeysServer(s, p)
	return nil
}

func (p *configKeysPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, fmt.Errorf("the config keys service is not dispensed")
}

func (p *configKeysPlugin) Keys(context.Context, *pluginpb.KeysRequest) (*pluginpb.KeysReply, error) {
	return &pluginpb.KeysReply{Keys: p.keys}, nil
}

// Keys returns the config keys the backend kind/name declares: a built-in's
// registered keys, or those the plugin binary egret-<kind>-<name> serves
// (started and stopped for the question). declared is false for a plugin
// that declares none (it answers UNIMPLEMENTED): its keys pass unchecked.
func (l *Loader) Keys(ctx context.Context, kind, name string) (keys []spi.Key, declared bool, err error) {
	if keys, ok := spi.BackendKeys(kind, name); ok {
		return keys, true, nil
	}
	path, err := l.Find(kind, name)
	if err != nil {
		return nil, false, err
	}
	proc, rpc, err := l.startPath(ctx, kind, name, path, true)
	if err != nil {
		return nil, false, err
	}
	defer proc.Kill()
	gc, ok := rpc.(*plugin.GRPCClient)
	if !ok {
		return nil, false, fmt.Errorf("plugin %s: got a %T connection, want gRPC", path, rpc)
	}
	reply, err := pluginpb.NewConfigKeysClient(gc.Conn).Keys(ctx, &pluginpb.KeysRequest{})
	if status.Code(err) == codes.Unimplemented {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("plugin %s: ask for its config keys: %w", path, err)
	}
	for _, pk := range reply.GetKeys() {
		typ, err := spi.ParseKeyType(pk.GetType())
		if err != nil {
			return nil, false, fmt.Errorf("plugin %s declares key %s: %w", path, pk.GetName(), err)
		}
		k := spi.Key{Name: pk.GetName(), Type: typ, Default: pk.GetDefault(), Required: pk.GetRequired(), Enum: pk.GetEnum(), Doc: pk.GetDoc()}
		if err := k.Validate(); err != nil {
			return nil, false, fmt.Errorf("plugin %s declares a bad key: %w", path, err)
		}
		keys = append(keys, k)
	}
	return keys, true, nil
}
