// Package packingtest is the conformance suite of Egret packing algorithms.
// A third-party algorithm runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		packingtest.Run(t, func(cfg spi.Config) (spi.Packing, error) { return mypacking.New(cfg) })
//		packingtest.RunRepacking(t, func(cfg spi.Config) (spi.Packing, error) { return mypacking.New(cfg) })
//	}
//
// The suite assumes the algorithm honours Egret's packing contract: the
// egret.packing.default.instance.* and egret.packing.padding.* config keys,
// the topology.component.* and topology.container.max.* settings, task ids
// from plan.TaskIDs, and container ids 1..N (see packing/README.md).
//
// Run and RunRepacking take a spitest.T: *testing.T under go test, or a
// spitest.Reporter's T outside it (`egret plugin verify`).
package packingtest
