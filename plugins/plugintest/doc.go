// Package plugintest helps test Egret plugins: it builds plugin binaries
// (once per test process), installs them in a plugin directory, loads them
// through a plugins.Loader, and connects an implementation to its host-side
// adapter in process over go-plugin's in-memory gRPC connection.
//
// A third-party scheduler plugin runs the scheduler conformance suite
// across the real plugin boundary like this:
//
//	func TestMain(m *testing.M) { plugintest.Main(m) }
//
//	func TestPlugin(t *testing.T) {
//		sched := plugintest.LoadScheduler(t, ".", "mine", spi.Config{...})
//		// run the suite (or your own checks) against sched
//	}
package plugintest
