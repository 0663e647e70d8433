package plugins

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/pluginpb"
)

// unlockTimeout bounds the Unlock call of a lock's unlock function, which
// has no context.
const unlockTimeout = 30 * time.Second

// StateManagerPlugin is the go-plugin plugin of kind "statemgr". On the
// plugin side Factory builds the session at Configure; on the host side
// Factory is nil.
type StateManagerPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Factory spi.StateManagerFactory
	// Log is passed to Factory; nil means no logging.
	Log *zap.Logger

	srv *stateManagerServer
}

var _ plugin.GRPCPlugin = (*StateManagerPlugin)(nil)

// GRPCServer registers the StateManager service.
func (p *StateManagerPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	var create func(spi.Config, *zap.Logger) (spi.StateManager, error)
	if p.Factory != nil {
		create = p.Factory
	}
	p.srv = &stateManagerServer{b: newBackend(spi.KindStateManager, p.Log, create), locks: map[string]func() error{}}
	pluginpb.RegisterStateManagerServer(s, p.srv)
	return nil
}

// GRPCClient returns the unconfigured host-side adapter; see
// DispenseStateManager.
func (p *StateManagerPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &stateManagerClient{client: newClient(spi.KindStateManager, ctx), rpc: pluginpb.NewStateManagerClient(c)}, nil
}

func (p *StateManagerPlugin) closeBackend() error {
	if p.srv == nil {
		return nil
	}
	return p.srv.closeAll()
}

// stateManagerServer serves one session in the plugin process.
type stateManagerServer struct {
	pluginpb.UnimplementedStateManagerServer
	b *backend[spi.StateManager]

	mu    sync.Mutex
	locks map[string]func() error // token -> unlock
}

func (s *stateManagerServer) Configure(_ context.Context, req *pluginpb.ConfigureRequest) (*pluginpb.Empty, error) {
	return &pluginpb.Empty{}, s.b.configure(req)
}

func (s *stateManagerServer) Get(ctx context.Context, req *pluginpb.PathRequest) (*pluginpb.NodeReply, error) {
	sm, err := s.b.get()
	if err != nil {
		return nil, err
	}
	n, err := sm.Get(ctx, req.GetPath())
	if err != nil {
		return nil, toStatus(err)
	}
	return &pluginpb.NodeReply{Data: n.Data, Version: n.Version, Ephemeral: n.Ephemeral}, nil
}

func (s *stateManagerServer) Children(ctx context.Context, req *pluginpb.PathRequest) (*pluginpb.ChildrenReply, error) {
	sm, err := s.b.get()
	if err != nil {
		return nil, err
	}
	names, err := sm.Children(ctx, req.GetPath())
	if err != nil {
		return nil, toStatus(err)
	}
	return &pluginpb.ChildrenReply{Names: names}, nil
}

func (s *stateManagerServer) Create(ctx context.Context, req *pluginpb.CreateRequest) (*pluginpb.Empty, error) {
	sm, err := s.b.get()
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(sm.Create(ctx, req.GetPath(), req.GetData(), req.GetEphemeral()))
}

func (s *stateManagerServer) Set(ctx context.Context, req *pluginpb.SetRequest) (*pluginpb.SetReply, error) {
	sm, err := s.b.get()
	if err != nil {
		return nil, err
	}
	v, err := sm.Set(ctx, req.GetPath(), req.GetData(), req.GetVersion())
	if err != nil {
		return nil, toStatus(err)
	}
	return &pluginpb.SetReply{Version: v}, nil
}

func (s *stateManagerServer) Delete(ctx context.Context, req *pluginpb.DeleteRequest) (*pluginpb.Empty, error) {
	sm, err := s.b.get()
	if err != nil {
		return nil, err
	}
	return &pluginpb.Empty{}, toStatus(sm.Delete(ctx, req.GetPath(), req.GetVersion()))
}

func (s *stateManagerServer) Multi(ctx context.Context, req *pluginpb.MultiRequest) (*pluginpb.Empty, error) {
	sm, err := s.b.get()
	if err != nil {
		return nil, err
	}
	ops := make([]spi.Op, len(req.GetOps()))
	for i, op := range req.GetOps() {
		kind, err := opKindFromProto(op.GetKind())
		if err != nil {
			return nil, errorf("multi op %d (%s): %w", i, op.GetPath(), err)
		}
		ops[i] = spi.Op{Kind: kind, Path: op.GetPath(), Data: op.GetData(), Version: op.GetVersion()}
	}
	return &pluginpb.Empty{}, toStatus(sm.Multi(ctx, ops...))
}

func (s *stateManagerServer) Watch(req *pluginpb.PathRequest, stream pluginpb.StateManager_WatchServer) error {
	sm, err := s.b.get()
	if err != nil {
		return err
	}
	ctx := stream.Context()
	events, err := sm.Watch(ctx, req.GetPath())
	if err != nil {
		return toStatus(err)
	}
	if err := stream.Send(&pluginpb.WatchEvent{Ready: true}); err != nil {
		return err
	}
	for e := range events {
		if err := stream.Send(&pluginpb.WatchEvent{Type: eventTypeToProto(e.Type), Path: e.Path}); err != nil {
			return err
		}
	}
	return nil
}

func (s *stateManagerServer) Lock(ctx context.Context, req *pluginpb.PathRequest) (*pluginpb.LockReply, error) {
	sm, err := s.b.get()
	if err != nil {
		return nil, err
	}
	unlock, err := sm.Lock(ctx, req.GetPath())
	if err != nil {
		return nil, toStatus(err)
	}
	if ctx.Err() != nil {
		// The host gave up while the lock was being taken: it will never
		// learn the token, so release the lock now.
		if uerr := unlock(); uerr != nil {
			s.b.log.Warn("releasing a lock whose caller went away", zap.String("path", req.GetPath()), zap.Error(uerr))
		}
		return nil, toStatus(fmt.Errorf("lock %s: %w (%w)", req.GetPath(), spi.ErrLockHeld, ctx.Err()))
	}
	token := newToken()
	s.mu.Lock()
	s.locks[token] = unlock
	s.mu.Unlock()
	return &pluginpb.LockReply{Token: token}, nil
}

func (s *stateManagerServer) Unlock(_ context.Context, req *pluginpb.UnlockRequest) (*pluginpb.Empty, error) {
	if _, err := s.b.get(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	unlock := s.locks[req.GetToken()]
	delete(s.locks, req.GetToken())
	s.mu.Unlock()
	if unlock == nil {
		// Already released, or released by Close.
		return &pluginpb.Empty{}, nil
	}
	return &pluginpb.Empty{}, toStatus(unlock())
}

func (s *stateManagerServer) SessionTimeout(context.Context, *pluginpb.Empty) (*pluginpb.SessionTimeoutReply, error) {
	sm, err := s.b.get()
	if err != nil {
		return nil, err
	}
	return &pluginpb.SessionTimeoutReply{Nanos: int64(sm.SessionTimeout())}, nil
}

func (s *stateManagerServer) Close(context.Context, *pluginpb.Empty) (*pluginpb.Empty, error) {
	return &pluginpb.Empty{}, s.closeAll()
}

// closeAll ends the session; its locks go with it.
func (s *stateManagerServer) closeAll() error {
	err := s.b.close(spi.StateManager.Close)
	s.mu.Lock()
	s.locks = map[string]func() error{}
	s.mu.Unlock()
	return err
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// stateManagerClient is the host side of a state manager plugin.
type stateManagerClient struct {
	client
	rpc     pluginpb.StateManagerClient
	timeout time.Duration
}

var _ spi.StateManager = (*stateManagerClient)(nil)

func (c *stateManagerClient) configure(ctx context.Context, name string, cfg spi.Config) error {
	c.name = name
	if _, err := c.rpc.Configure(ctx, configureRequest(name, cfg)); err != nil {
		return c.rpcErr(ctx, err)
	}
	r, err := c.rpc.SessionTimeout(ctx, &pluginpb.Empty{})
	if err != nil {
		return c.rpcErr(ctx, err)
	}
	c.timeout = time.Duration(r.GetNanos())
	return nil
}

func (c *stateManagerClient) Get(ctx context.Context, path string) (spi.Node, error) {
	if err := c.check(); err != nil {
		return spi.Node{}, err
	}
	r, err := c.rpc.Get(ctx, &pluginpb.PathRequest{Path: path})
	if err != nil {
		return spi.Node{}, c.rpcErr(ctx, err)
	}
	return spi.Node{Data: r.GetData(), Version: r.GetVersion(), Ephemeral: r.GetEphemeral()}, nil
}

func (c *stateManagerClient) Children(ctx context.Context, path string) ([]string, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	r, err := c.rpc.Children(ctx, &pluginpb.PathRequest{Path: path})
	if err != nil {
		return nil, c.rpcErr(ctx, err)
	}
	names := r.GetNames()
	if names == nil {
		names = []string{}
	}
	return names, nil
}

func (c *stateManagerClient) Create(ctx context.Context, path string, data []byte, ephemeral bool) error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.rpc.Create(ctx, &pluginpb.CreateRequest{Path: path, Data: data, Ephemeral: ephemeral})
	return c.rpcErr(ctx, err)
}

func (c *stateManagerClient) Set(ctx context.Context, path string, data []byte, version int64) (int64, error) {
	if err := c.check(); err != nil {
		return 0, err
	}
	r, err := c.rpc.Set(ctx, &pluginpb.SetRequest{Path: path, Data: data, Version: version})
	if err != nil {
		return 0, c.rpcErr(ctx, err)
	}
	return r.GetVersion(), nil
}

func (c *stateManagerClient) Delete(ctx context.Context, path string, version int64) error {
	if err := c.check(); err != nil {
		return err
	}
	_, err := c.rpc.Delete(ctx, &pluginpb.DeleteRequest{Path: path, Version: version})
	return c.rpcErr(ctx, err)
}

func (c *stateManagerClient) Multi(ctx context.Context, ops ...spi.Op) error {
	if err := c.check(); err != nil {
		return err
	}
	req := &pluginpb.MultiRequest{Ops: make([]*pluginpb.Op, len(ops))}
	for i, op := range ops {
		kind, err := opKindToProto(op.Kind)
		if err != nil {
			return fmt.Errorf("multi op %d (%s): %w", i, op.Path, err)
		}
		req.Ops[i] = &pluginpb.Op{Kind: kind, Path: op.Path, Data: op.Data, Version: op.Version}
	}
	_, err := c.rpc.Multi(ctx, req)
	return c.rpcErr(ctx, err)
}

// Watch opens a Watch stream and waits for the plugin to confirm that the
// watch is in place, so that no change made after Watch returns is missed.
// When the stream breaks while ctx is alive (the plugin died), the channel
// delivers EventSessionLost for path before it closes.
func (c *stateManagerClient) Watch(ctx context.Context, path string) (<-chan spi.Event, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	stream, err := c.rpc.Watch(ctx, &pluginpb.PathRequest{Path: path})
	if err != nil {
		return nil, c.rpcErr(ctx, err)
	}
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: watch %s: stream ended before the watch was set up", c.label(), path)
		}
		return nil, c.rpcErr(ctx, err)
	}
	if !first.GetReady() {
		return nil, fmt.Errorf("%s: watch %s: protocol error: first message is not the ready marker", c.label(), path)
	}
	out := make(chan spi.Event, 16)
	go func() {
		defer close(out)
		for {
			m, err := stream.Recv()
			if err != nil {
				if !errors.Is(err, io.EOF) && ctx.Err() == nil && !c.closed.Load() {
					select {
					case out <- spi.Event{Type: spi.EventSessionLost, Path: path}:
					case <-ctx.Done():
					}
				}
				return
			}
			t, ok := eventTypeFromProto(m.GetType())
			if !ok {
				continue // an event type newer than this host
			}
			select {
			case out <- spi.Event{Type: t, Path: m.GetPath()}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Lock takes the lock in the plugin's session. When ctx ends first the
// error wraps spi.ErrLockHeld.
func (c *stateManagerClient) Lock(ctx context.Context, path string) (func() error, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	r, err := c.rpc.Lock(ctx, &pluginpb.PathRequest{Path: path})
	if err != nil {
		err = c.rpcErr(ctx, err)
		if ctx.Err() != nil && !errors.Is(err, spi.ErrLockHeld) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			err = fmt.Errorf("lock %s: %w (%w)", path, spi.ErrLockHeld, ctx.Err())
		}
		return nil, err
	}
	token := r.GetToken()
	var once sync.Once
	var uerr error
	return func() error {
		once.Do(func() {
			if c.closed.Load() {
				return // Close released the session's locks
			}
			if c.exited() {
				uerr = c.exitedErr()
				return
			}
			uctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
			defer cancel()
			if _, err := c.rpc.Unlock(uctx, &pluginpb.UnlockRequest{Token: token}); err != nil {
				uerr = fmt.Errorf("unlock %s: %w", path, c.rpcErr(uctx, err))
			}
		})
		return uerr
	}, nil
}

// SessionTimeout returns the session timeout the plugin reported at
// Configure.
func (c *stateManagerClient) SessionTimeout() time.Duration { return c.timeout }

// Close ends the plugin's session (its ephemeral nodes and locks go) and
// stops the plugin process when a Loader started it.
func (c *stateManagerClient) Close() error {
	return c.shutdown(func(ctx context.Context, e *pluginpb.Empty) error {
		_, err := c.rpc.Close(ctx, e)
		return err
	})
}

func opKindToProto(k spi.OpKind) (pluginpb.OpKind, error) {
	switch k {
	case spi.OpCreate:
		return pluginpb.OpKind_OP_KIND_CREATE, nil
	case spi.OpSet:
		return pluginpb.OpKind_OP_KIND_SET, nil
	case spi.OpDelete:
		return pluginpb.OpKind_OP_KIND_DELETE, nil
	case spi.OpCheck:
		return pluginpb.OpKind_OP_KIND_CHECK, nil
	}
	return 0, fmt.Errorf("unknown op kind %d (want spi.OpCreate, OpSet, OpDelete or OpCheck)", k)
}

func opKindFromProto(k pluginpb.OpKind) (spi.OpKind, error) {
	switch k {
	case pluginpb.OpKind_OP_KIND_CREATE:
		return spi.OpCreate, nil
	case pluginpb.OpKind_OP_KIND_SET:
		return spi.OpSet, nil
	case pluginpb.OpKind_OP_KIND_DELETE:
		return spi.OpDelete, nil
	case pluginpb.OpKind_OP_KIND_CHECK:
		return spi.OpCheck, nil
	}
	return 0, fmt.Errorf("unknown op kind %v", k)
}

var eventTypes = []struct {
	spi spi.EventType
	pb  pluginpb.EventType
}{
	{spi.EventCreated, pluginpb.EventType_EVENT_TYPE_CREATED},
	{spi.EventDeleted, pluginpb.EventType_EVENT_TYPE_DELETED},
	{spi.EventDataChanged, pluginpb.EventType_EVENT_TYPE_DATA_CHANGED},
	{spi.EventChildrenChanged, pluginpb.EventType_EVENT_TYPE_CHILDREN_CHANGED},
	{spi.EventSessionLost, pluginpb.EventType_EVENT_TYPE_SESSION_LOST},
}

func eventTypeToProto(t spi.EventType) pluginpb.EventType {
	for _, e := range eventTypes {
		if e.spi == t {
			return e.pb
		}
	}
	return pluginpb.EventType_EVENT_TYPE_UNSPECIFIED
}

func eventTypeFromProto(t pluginpb.EventType) (spi.EventType, bool) {
	for _, e := range eventTypes {
		if e.pb == t {
			return e.spi, true
		}
	}
	return 0, false
}
