package plugins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/pluginpb"
)

// serviceKinds maps the gRPC service of each kind to the kind.
var serviceKinds = map[string]string{
	pluginpb.StateManager_ServiceDesc.ServiceName:      spi.KindStateManager,
	pluginpb.Uploader_ServiceDesc.ServiceName:          spi.KindUploader,
	pluginpb.Packing_ServiceDesc.ServiceName:           spi.KindPacking,
	pluginpb.Scheduler_ServiceDesc.ServiceName:         spi.KindScheduler,
	pluginpb.MetricsSink_ServiceDesc.ServiceName:       spi.KindMetricsSink,
	pluginpb.CheckpointStorage_ServiceDesc.ServiceName: spi.KindCheckpointStorage,
}

// Kind starts the plugin binary at path, completes the handshake and asks
// it which of Egret's services it serves (gRPC server reflection, which
// every go-plugin server has), then stops it. It returns the plugin's kind,
// for a binary whose name does not say it.
func (l *Loader) Kind(ctx context.Context, path string) (string, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if fi, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("plugin binary %s: %w", path, err)
	} else if fi.IsDir() {
		return "", fmt.Errorf("plugin binary %s is a directory", path)
	}
	// Any kind's plugin set does for the handshake: the services are
	// looked up by reflection.
	proc, rpc, err := l.startPath(ctx, spi.KindScheduler, filepath.Base(path), path, true)
	if err != nil {
		return "", err
	}
	defer proc.Kill()
	gc, ok := rpc.(*plugin.GRPCClient)
	if !ok {
		return "", fmt.Errorf("plugin %s: got a %T connection, want gRPC", path, rpc)
	}
	services, err := listServices(ctx, gc.Conn)
	if err != nil {
		return "", fmt.Errorf("plugin %s: list its gRPC services: %w", path, err)
	}
	var kinds []string
	for _, s := range services {
		if k, ok := serviceKinds[s]; ok {
			kinds = append(kinds, k)
		}
	}
	switch len(kinds) {
	case 1:
		return kinds[0], nil
	case 0:
		return "", fmt.Errorf("plugin %s serves none of Egret's plugin services (it serves %v)", path, services)
	}
	slices.Sort(kinds)
	return "", fmt.Errorf("plugin %s serves several kinds (%v): name the one to use", path, kinds)
}

func listServices(ctx context.Context, conn *grpc.ClientConn) ([]string, error) {
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = stream.CloseSend() }()
	req := &reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{ListServices: ""}}
	if err := stream.Send(req); err != nil {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	if e := resp.GetErrorResponse(); e != nil {
		return nil, fmt.Errorf("reflection error %d: %s", e.GetErrorCode(), e.GetErrorMessage())
	}
	var out []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		out = append(out, s.GetName())
	}
	return out, nil
}
