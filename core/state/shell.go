package state

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/egretpb"
)

// ShellNode is the name of a container's shell node in ShellsDir:
// <topology>.<container>. Topology names hold no '.', so the name is
// unambiguous.
func ShellNode(topologyName string, container int) string {
	return topologyName + "." + strconv.Itoa(container)
}

// ShellLocation reads where the shell of a topology's container listens.
func (s *Store) ShellLocation(ctx context.Context, topologyName string, container int) (*egretpb.ShellLocation, error) {
	if err := names.Check(names.Topology, topologyName); err != nil {
		return nil, err
	}
	if container < 0 {
		return nil, fmt.Errorf("container %d is negative", container)
	}
	var loc egretpb.ShellLocation
	node := ShellNode(topologyName, container)
	return &loc, s.getProto(ctx, ShellsDir, node, &loc, func() string {
		if loc.GetTopologyName() != topologyName || int(loc.GetContainer()) != container {
			return ShellNode(loc.GetTopologyName(), int(loc.GetContainer()))
		}
		return node
	})
}

// ShellContainers lists the containers of a topology whose shell has
// published its location.
func (s *Store) ShellContainers(ctx context.Context, topologyName string) ([]int, error) {
	kids, err := s.sm.Children(ctx, ShellsDir)
	if errors.Is(err, spi.ErrNotFound) {
		return nil, nil // no shell has registered yet
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", ShellsDir, err)
	}
	var out []int
	for _, k := range kids {
		t, c, ok := strings.Cut(k, ".")
		if !ok || t != topologyName {
			continue
		}
		if n, err := names.ParseContainer(c); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// SetShellLocation writes the ephemeral node of a container's shell,
// replacing one a previous session of the shell left.
func (s *Store) SetShellLocation(ctx context.Context, loc *egretpb.ShellLocation) error {
	if err := names.Check(names.Topology, loc.GetTopologyName()); err != nil {
		return err
	}
	return s.put(ctx, ShellsDir, ShellNode(loc.GetTopologyName(), int(loc.GetContainer())), loc, true)
}

// Secret reads a topology's secret.
func (s *Store) Secret(ctx context.Context, topologyName string) ([]byte, error) {
	var sec egretpb.TopologySecret
	if err := s.getProto(ctx, SecretsDir, topologyName, &sec, sec.GetTopologyName); err != nil {
		return nil, err
	}
	if len(sec.GetSecret()) == 0 {
		return nil, corrupt(SecretsDir, topologyName, errors.New("the secret is empty"))
	}
	return sec.GetSecret(), nil
}
