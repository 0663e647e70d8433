package executor

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
)

// clusterConfig reads the cluster config of the extracted package, with
// the command line's settings over it.
func (e *Executor) clusterConfig() (spi.Config, error) {
	cluster, err := readClusterConfig(e.paths.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	for k, v := range e.cfg.Settings {
		cluster[k] = v
	}
	return cluster, nil
}

// packageOf returns the package this container runs: the one egret upgrade
// recorded for it in the execution state (state.ContainerPackage), else
// the one of the command line. A topology without an execution state (or
// of another topology id: reconcile stops such an executor) runs the
// command line's package; an unreadable execution state, or a record
// without URI or digest, is an error.
func (e *Executor) packageOf(ctx context.Context, store *state.Store) (uri, sha string, err error) {
	uri, sha = e.cfg.PackageURI, e.cfg.PackageSHA256
	es, err := store.ExecutionState(ctx, e.cfg.TopologyName)
	if errors.Is(err, spi.ErrNotFound) {
		return uri, sha, nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read the execution state (which names this container's package): %w", err)
	}
	if id := e.cfg.TopologyID; id != "" && es.GetTopologyId() != "" && es.GetTopologyId() != id {
		return uri, sha, nil
	}
	if es.GetCurrentPackage() == nil && len(es.GetContainerPackages()) == 0 {
		return uri, sha, nil // never upgraded
	}
	ref := state.ContainerPackage(es, e.cfg.Container)
	if ref.GetUri() == "" || ref.GetSha256() == "" {
		return "", "", fmt.Errorf("the execution state of %q gives container %d a package without URI or digest (%q, %q): egret upgrade --rollback or a new egret upgrade rewrites it",
			e.cfg.TopologyName, e.cfg.Container, ref.GetUri(), ref.GetSha256())
	}
	if ref.GetUri() != uri || ref.GetSha256() != sha {
		e.log.Info("this container runs the package egret upgrade gave it", zap.String("uri", ref.GetUri()), zap.String("sha256", ref.GetSha256()))
	}
	return ref.GetUri(), ref.GetSha256(), nil
}
