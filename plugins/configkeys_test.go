package plugins_test

import (
	"context"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/statemgr/localfs"
)

// TestPluginKeys: a built-in served out of process declares its registered
// keys over the boundary (ServeBuiltin), and a plugin that declares none
// says so (its keys pass unchecked).
func TestPluginKeys(t *testing.T) {
	dir := t.TempDir()
	plugintest.Install(t, dir, spi.KindStateManager, "lfs", plugintest.Build(t, localfsPlugin))
	plugintest.Install(t, dir, spi.KindMetricsSink, "jsonl", plugintest.Build(t, sinkPlugin))
	l := plugintest.NewLoader(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	want, _ := spi.BackendKeys(spi.KindStateManager, "localfs")
	keys, declared, err := l.Keys(ctx, spi.KindStateManager, "lfs")
	if err != nil || !declared || len(keys) != len(want) || len(keys) == 0 {
		t.Fatalf("Keys(lfs) = %+v, %v, %v; want %+v", keys, declared, err, want)
	}
	for i, k := range keys {
		w := want[i]
		if k.Name != w.Name || k.Type != w.Type || k.Default != w.Default || k.Required != w.Required || k.Doc != w.Doc {
			t.Errorf("key %d = %+v, want %+v", i, k, w)
		}
	}
	if keys[0].Name != localfs.KeyPollInterval {
		t.Errorf("first key %s", keys[0].Name)
	}

	keys, declared, err = l.Keys(ctx, spi.KindMetricsSink, "jsonl")
	if err != nil || declared || keys != nil {
		t.Errorf("Keys(jsonl) = %+v, %v, %v; want no declaration", keys, declared, err)
	}
	if _, _, err := l.Keys(ctx, spi.KindUploader, "nosuch"); err == nil {
		t.Error("Keys of a missing plugin: no error")
	}
	// A built-in answers from the registry, without a process.
	if keys, declared, err := l.Keys(ctx, spi.KindStateManager, "localfs"); err != nil || !declared || len(keys) != len(want) {
		t.Errorf("Keys(localfs) = %+v, %v, %v", keys, declared, err)
	}
}
