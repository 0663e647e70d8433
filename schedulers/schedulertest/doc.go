// Package schedulertest is the conformance suite of Egret's scheduler SPI
// (core/spi.Scheduler). Every scheduler, built in or a third party's plugin,
// should pass it:
//
//	func TestConformance(t *testing.T) {
//		schedulertest.Run(t, schedulertest.Harness{
//			New:        func(t *testing.T, topology string) spi.Scheduler { ... },
//			Containers: func(ctx context.Context, topology string) (map[int]string, error) { ... },
//		})
//	}
//
// The suite drives the scheduler only through the SPI, the way the CLI
// does: every operation uses a fresh scheduler from Harness.New (so a
// library-mode scheduler must find its jobs again from the resource manager)
// and a topology is submitted with Launch when the scheduler implements
// spi.Launcher, with Schedule otherwise. It checks what happened through
// Harness.Containers, which must look at the resource manager itself (the
// processes, the allocations), never at the scheduler's own report.
//
// The same Harness works for a scheduler in process and for one loaded over
// the plugin boundary: New returns whatever spi.Scheduler the host gets, and
// Containers still observes the resource manager directly.
//
// Run takes a spitest.T, so the same checks also run outside go test: set
// Harness.Open (a context-and-error factory) instead of Harness.New, as
// `egret plugin verify` does with the plugin's observer
// (plugins.WithObserver) as Containers. FailOver needs go test and is
// skipped elsewhere.
package schedulertest
