package plugins_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/checkpoints/checkpointtest"
	"github.com/egret-stream/egret/checkpoints/localfs"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/plugins/plugintest"
)

const ckptPlugin = "./testdata/egret-checkpointstorage-localfs"

// localfsCheckpointSuite is the conformance suite over storages that open
// builds on one root, damaged through a local localfs storage of the root.
func localfsCheckpointSuite(t *testing.T, open func(ctx context.Context, cfg spi.Config) (spi.CheckpointStorage, error)) checkpointtest.Suite {
	cfg := spi.Config{localfs.KeyRoot: t.TempDir()}
	return checkpointtest.Suite{
		Open: func(ctx context.Context) (spi.CheckpointStorage, error) { return open(ctx, cfg) },
		Damage: func(_ context.Context, key spi.CheckpointKey, damage func([]byte) []byte) error {
			st, err := localfs.New(cfg, nil)
			if err != nil {
				return err
			}
			return st.(*localfs.Storage).Damage(key, damage)
		},
	}
}

// The checkpoint storage conformance suite across an in-process plugin
// connection and across a plugin process (the built-in localfs storage
// served as a plugin).
func TestCheckpointStorageConformance(t *testing.T) {
	t.Run("InProcess", func(t *testing.T) {
		localfsCheckpointSuite(t, func(_ context.Context, cfg spi.Config) (spi.CheckpointStorage, error) {
			return plugintest.CheckpointStorage(t, localfs.New, cfg), nil
		}).Run(t)
	})
	t.Run("Plugin", func(t *testing.T) {
		dir := t.TempDir()
		plugintest.Install(t, dir, spi.KindCheckpointStorage, "disk", plugintest.Build(t, ckptPlugin))
		l := plugintest.NewLoader(t, dir)
		localfsCheckpointSuite(t, func(ctx context.Context, cfg spi.Config) (spi.CheckpointStorage, error) {
			st, err := l.LoadCheckpointStorage(ctx, "disk", cfg)
			if err == nil {
				if _, ok := plugins.ProcessOf(st); !ok {
					t.Errorf("LoadCheckpointStorage(disk) = %T, not a plugin process", st)
				}
			}
			return st, err
		}).Run(t)
	})
}

// The built-in name loads in process; a plugin's Configure error, its
// kind and a missing plugin reach the host.
func TestCheckpointStoragePluginErrors(t *testing.T) {
	dir := t.TempDir()
	bin := plugintest.Build(t, ckptPlugin)
	plugintest.Install(t, dir, spi.KindCheckpointStorage, "disk", bin)
	l := plugins.NewLoader(dir, zaptest.NewLogger(t))
	t.Cleanup(func() { _ = l.Close() })
	st, err := l.LoadCheckpointStorage(testCtx(t), "localfs", spi.Config{localfs.KeyRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*localfs.Storage); !ok {
		t.Errorf("built-in localfs loaded as %T", st)
	}
	if _, err := l.LoadCheckpointStorage(testCtx(t), "disk", spi.Config{}); err == nil || !strings.Contains(err.Error(), localfs.KeyRoot+" is required") {
		t.Fatalf("load without its root: %v", err)
	}
	kind, err := l.Kind(testCtx(t), bin)
	if err != nil || kind != spi.KindCheckpointStorage {
		t.Fatalf("Kind = %q, %v; want %q", kind, err, spi.KindCheckpointStorage)
	}
	if _, err := l.LoadCheckpointStorage(testCtx(t), "nosuch", spi.Config{}); err == nil || !strings.Contains(err.Error(), "egret-checkpointstorage-nosuch") {
		t.Fatalf("load of a missing plugin: %v", err)
	}
}
