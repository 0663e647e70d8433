package plugins_test

import (
	"testing"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/packing/ffd"
	"github.com/egret-stream/egret/packing/packingtest"
	"github.com/egret-stream/egret/packing/rcrr"
	"github.com/egret-stream/egret/packing/roundrobin"
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/plugins/plugintest"
)

var packingAlgorithms = []string{roundrobin.Name, ffd.Name, rcrr.Name}

// The packing conformance suites through the gRPC adapters, in process.
func TestPackingConformanceInProcess(t *testing.T) {
	for _, name := range packingAlgorithms {
		t.Run(name, func(t *testing.T) {
			f, err := spi.LookupPacking(name)
			if err != nil {
				t.Fatal(err)
			}
			newPacking := plugintest.PackingFactory(t, f)
			packingtest.Run(t, newPacking)
			packingtest.RunRepacking(t, newPacking)
		})
	}
}

// The packing conformance suites against the built-in algorithms served
// by plugin processes (one process per algorithm instance).
func TestPackingConformancePlugin(t *testing.T) {
	bin := plugintest.Build(t, packingPlugin)
	dir := t.TempDir()
	for _, name := range packingAlgorithms {
		plugintest.Install(t, dir, spi.KindPacking, "plugin-"+name, bin)
	}
	for _, name := range packingAlgorithms {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := plugintest.NewLoader(t, dir)
			newPacking := func(cfg spi.Config) (spi.Packing, error) {
				p, _, err := l.LoadPacking(testCtx(t), "plugin-"+name, cfg)
				if err != nil {
					return nil, err
				}
				if _, ok := plugins.ProcessOf(p); !ok {
					t.Fatalf("%s was not loaded as a plugin", name)
				}
				return p, nil
			}
			packingtest.Run(t, newPacking)
			packingtest.RunRepacking(t, newPacking)
		})
	}
}
