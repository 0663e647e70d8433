// Package metricssinktest is the conformance suite for spi.MetricsSink
// implementations: external metrics sinks served as plugins
// (egret-metricssink-<name>), tested in process or through a plugin
// process, under go test or by `egret plugin verify`.
//
//	func TestConformance(t *testing.T) {
//		metricssinktest.Suite{
//			Open: func(ctx context.Context) (spi.MetricsSink, error) {
//				return mysink.New(spi.Config{...}, zaptest.NewLogger(t))
//			},
//			Delivered: mysink.ReadBack, // optional
//		}.Run(t)
//	}
//
// Without Delivered the suite checks the contract a caller sees (batches
// of every shape accepted, cancellation, Close); with it, it also checks
// that every report of every accepted batch arrived once, in order, with
// its values.
package metricssinktest
