package ffd_test

import (
	"testing"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/packing/ffd"
	"github.com/egret-stream/egret/packing/packingtest"
)

func newPacking(cfg spi.Config) (spi.Packing, error) {
	f, err := spi.LookupPacking(ffd.Name)
	if err != nil {
		return nil, err
	}
	return f(cfg)
}

func TestConformance(t *testing.T) { packingtest.Run(t, newPacking) }

func TestRepackingConformance(t *testing.T) { packingtest.RunRepacking(t, newPacking) }
