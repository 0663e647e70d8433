// Package checkpointtest is the conformance suite of spi.CheckpointStorage:
// every checkpoint storage, built in or a plugin, runs it (in process with
// go test, across the plugin boundary, and from `egret plugin verify`).
//
//	func TestConformance(t *testing.T) {
//		root := t.TempDir()
//		checkpointtest.Suite{
//			Open: func(ctx context.Context) (spi.CheckpointStorage, error) {
//				return mystorage.New(spi.Config{"egret.checkpoint.my.root": root}, nil)
//			},
//		}.Run(t)
//	}
//
// Storages opened by one run may share their place of storage: every check
// uses topologies of its own.
package checkpointtest
