package launcher

import (
	"strconv"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
)

// checkTopology validates the topology name an operation is given, first
// thing: before the config is resolved for it, a backend is loaded or
// anything is read or removed. An invalid name is bad input.
func checkTopology(name string) error {
	if err := names.Check(names.Topology, name); err != nil {
		return badInput(err)
	}
	return nil
}

// checkContainer validates a container index (spi.AllContainers: all).
func checkContainer(container int) error {
	if container < 0 && container != spi.AllContainers {
		return badInput(&names.Error{Kind: names.Container, Value: strconv.Itoa(container)})
	}
	return nil
}
