package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"

	plugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/pluginpb"
)

// stateChunk is the size of the chunks a state crosses the plugin
// boundary in: well below gRPC's default 4 MiB message limit.
const stateChunk = 1 << 20

// maxPluginState bounds a state the plugin side accepts from the host.
const maxPluginState = 1 << 30

// CheckpointStoragePlugin is the go-plugin plugin of kind
// "checkpointstorage". On the plugin side Factory builds the storage at
// Configure; on the host side it is nil.
type CheckpointStoragePlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Factory spi.CheckpointStorageFactory
	// Log is passed to Factory; nil means no logging.
	Log *zap.Logger

	srv *checkpointStorageServer
}

var _ plugin.GRPCPlugin = (*CheckpointStoragePlugin)(nil)

// GRPCServer registers the CheckpointStorage service.
func (p *CheckpointStoragePlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	var create func(spi.Config, *zap.Logger) (spi.CheckpointStorage, error)
	if p.Factory != nil {
		create = p.Factory
	}
	p.srv = &checkpointStorageServer{b: newBackend(spi.KindCheckpointStorage, p.Log, create)}
	pluginpb.RegisterCheckpointStorageServer(s, p.srv)
	return nil
}

// GRPCClient returns the unconfigured host-side adapter; see
// DispenseCheckpointStorage.
func (p *CheckpointStoragePlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &checkpointStorageClient{client: newClient(spi.KindCheckpointStorage, ctx), rpc: pluginpb.NewCheckpointStorageClient(c)}, nil
}

func (p *CheckpointStoragePlugin) closeBackend() error {
	if p.srv == nil {
		return nil
	}
	return p.srv.b.close(spi.CheckpointStorage.Close)
}

type checkpointStorageServer struct {
	pluginpb.UnimplementedCheckpointStorageServer
	b *backend[spi.CheckpointStorage]
}

func keyFromPB(k *pluginpb.CheckpointKey) spi.CheckpointKey {
	return spi.CheckpointKey{Topology: k.GetTopology(), Checkpoint: k.GetCheckpoint(), Task: k.GetTask()}
}

func keyToPB(k spi.CheckpointKey) *pluginpb.CheckpointKey {
	return &pluginpb.CheckpointKey{Topology: k.Topology, Checkpoint: k.Checkpoint, Task: k.Task}
}

func (s *checkpointStorageServer) Configure(_ context.Context, req *pluginpb.ConfigureRequest) (*pluginpb.Empty, error) {
	return &pluginpb.Empty{}, s.b.configure(req)
}

func (s *checkpointStorageServer) Store(stream pluginpb.CheckpointStorage_StoreServer) error {
	st, err := s.b.get()
	if err != nil {
		return err
	}
	first, err := stream.Recv()
	if err != nil {
		return toStatus(fmt.Errorf("checkpoint storage plugin: receive the state: %w", err))
	}
	if first.GetKey() == nil {
		return errorf("checkpoint storage plugin: the first chunk of a state carries no key")
	}
	key, size := keyFromPB(first.GetKey()), first.GetSize()
	if size < 0 || size > maxPluginState {
		return errorf("checkpoint storage plugin: state of %d bytes is out of range (at most %d)", size, maxPluginState)
	}
	state := make([]byte, 0, size)
	state = append(state, first.GetChunk()...)
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return toStatus(fmt.Errorf("checkpoint storage plugin: receive the state of %+v: %w", key, err))
		}
		if m.GetKey() != nil {
			return errorf("checkpoint storage plugin: a later chunk of a state carries a key")
		}
		if int64(len(state)+len(m.GetChunk())) > size {
			return errorf("checkpoint storage plugin: the state of %+v is longer than the announced %d bytes", key, size)
		}
		state = append(state, m.GetChunk()...)
	}
	if int64(len(state)) != size {
		return errorf("checkpoint storage plugin: the state of %+v has %d bytes, %d were announced", key, len(state), size)
	}
	if err := st.Store(stream.Context(), key, state); err != nil {
		return toStatus(err)
	}
	return stream.SendAndClose(&pluginpb.Empty{})
}

func (s *checkpointStorageServer) Load(req *pluginpb.CheckpointKey, stream pluginpb.CheckpointStorage_LoadServer) error {
	st, err := s.b.get()
	if err != nil {
		return err
	}
	state, err := st.Load(stream.Context(), keyFromPB(req))
	if err != nil {
		return toStatus(err)
	}
	first := true
	for first || len(state) > 0 {
		n := min(len(state), stateChunk)
		m := &pluginpb.LoadStateChunk{Chunk: state[:n]}
		if first {
			m.Size = int64(len(state))
			first = false
		}
		if err := stream.Send(m); err != nil {
			return err
		}
		state = state[n:]
	}
	return nil
}

func (s *checkpointStorageServer) List(ctx context.Context, req *pluginpb.ListCheckpointsRequest) (*pluginpb.ListCheckpointsReply, error) {
	st, err := s.b.get()
	if err != nil {
		return nil, err
	}
	ids, err := st.List(ctx, req.GetTopology())
	if err != nil {
		return nil, toStatus(err)
	}
	return &pluginpb.ListCheckpointsReply{Checkpoints: ids}, nil
}

func (s *checkpointStorageServer) Delete(ctx context.Context, req *pluginpb.DeleteCheckpointRequest) (*pluginpb.Empty, error) {
	st, err := s.b.get()
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(st.Delete(ctx, req.GetTopology(), req.GetCheckpoint()))
}

func (s *checkpointStorageServer) Close(context.Context, *pluginpb.Empty) (*pluginpb.Empty, error) {
	return &pluginpb.Empty{}, s.b.close(spi.CheckpointStorage.Close)
}

// checkpointStorageClient is the host side of a checkpoint storage plugin.
type checkpointStorageClient struct {
	client
	rpc pluginpb.CheckpointStorageClient
}

var _ spi.CheckpointStorage = (*checkpointStorageClient)(nil)

func (c *checkpointStorageClient) configure(ctx context.Context, name string, cfg spi.Config) error {
	c.name = name
	_, err := c.rpc.Configure(ctx, configureRequest(name, cfg))
	return c.rpcErr(ctx, err)
}

func (c *checkpointStorageClient) Store(ctx context.Context, key spi.CheckpointKey, state []byte) error {
	if err := c.check(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", c.label(), err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream on an early return
	stream, err := c.rpc.Store(ctx)
	if err != nil {
		return c.rpcErr(ctx, err)
	}
	first := true
	for first || len(state) > 0 {
		n := min(len(state), stateChunk)
		m := &pluginpb.StoreStateChunk{Chunk: state[:n]}
		if first {
			m.Key, m.Size = keyToPB(key), int64(len(state))
			first = false
		}
		if err := stream.Send(m); err != nil {
			// io.EOF: the plugin ended the call; CloseAndRecv says why.
			if !errors.Is(err, io.EOF) {
				return c.rpcErr(ctx, err)
			}
			break
		}
		state = state[n:]
	}
	_, err = stream.CloseAndRecv()
	return c.rpcErr(ctx, err)
}

func (c *checkpointStorageClient) Load(ctx context.Context, key spi.CheckpointKey) ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.label(), err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Load(ctx, keyToPB(key))
	if err != nil {
		return nil, c.rpcErr(ctx, err)
	}
	var state []byte
	size := int64(-1)
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, c.rpcErr(ctx, err)
		}
		if size < 0 {
			size = m.GetSize()
			if size < 0 || size > maxPluginState {
				return nil, fmt.Errorf("%s: Load announced a state of %d bytes", c.label(), size)
			}
			state = make([]byte, 0, size)
		}
		if int64(len(state)+len(m.GetChunk())) > size {
			return nil, fmt.Errorf("%s: Load sent more than the announced %d bytes", c.label(), size)
		}
		state = append(state, m.GetChunk()...)
	}
	if size < 0 || int64(len(state)) != size {
		return nil, fmt.Errorf("%s: Load of %+v ended after %d of %d bytes", c.label(), key, len(state), size)
	}
	return state, nil
}

func (c *checkpointStorageClient) List(ctx context.Context, topology string) ([]int64, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	r, err := c.rpc.List(ctx, &pluginpb.ListCheckpointsRequest{Topology: topology})
	if err != nil {
		return nil, c.rpcErr(ctx, err)
	}
	ids := r.GetCheckpoints()
	if ids == nil {
		ids = []int64{}
	}
	return ids, nil
}

func (c *checkpointStorageClient) Delete(ctx context.Context, topology string, checkpoint int64) error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.rpc.Delete(ctx, &pluginpb.DeleteCheckpointRequest{Topology: topology, Checkpoint: checkpoint})
	return c.rpcErr(ctx, err)
}

// Close closes the plugin's storage and stops the plugin process when a
// Loader started it.
func (c *checkpointStorageClient) Close() error {
	return c.shutdown(func(ctx context.Context, e *pluginpb.Empty) error {
		_, err := c.rpc.Close(ctx, e)
		return err
	})
}
