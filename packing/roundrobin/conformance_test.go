package roundrobin_test

import (
	"testing"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/packing/packingtest"
	"github.com/egret-stream/egret/packing/roundrobin"
)

func newPacking(cfg spi.Config) (spi.Packing, error) {
	f, err := spi.LookupPacking(roundrobin.Name)
	if err != nil {
		return nil, err
	}
	return f(cfg)
}

func TestConformance(t *testing.T) { packingtest.Run(t, newPacking) }

func TestRepackingConformance(t *testing.T) { packingtest.RunRepacking(t, newPacking) }
