package plugins_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/egret-stream/egret/plugins/plugintest"
)

// testPlugin is the multi-purpose test plugin binary; it serves the plugin
// its installed name selects.
const testPlugin = "./testdata/egretplugin"

// Plugins that serve built-in backends.
const (
	localfsPlugin   = "./testdata/egret-statemgr-localfs"
	zookeeperPlugin = "./testdata/egret-statemgr-zookeeper"
	httpPlugin      = "./testdata/egret-uploader-http"
	sinkPlugin      = "./testdata/egret-metricssink-jsonl"
	packingPlugin   = "./testdata/egret-packing-builtins"
)

func TestMain(m *testing.M) {
	if os.Getenv(envHostDir) != "" {
		runHost() // the host helper of TestPluginDiesWithHost; never returns
	}
	plugintest.Main(m, testPlugin, localfsPlugin, zookeeperPlugin, httpPlugin, packingPlugin, sinkPlugin, ckptPlugin)
}

// pluginDir returns a plugin directory holding the test plugin under the
// given kind/name pairs.
func pluginDir(t *testing.T, kindNames ...[2]string) string {
	t.Helper()
	bin := plugintest.Build(t, testPlugin)
	dir := t.TempDir()
	for _, kn := range kindNames {
		plugintest.Install(t, dir, kn[0], kn[1], bin)
	}
	return dir
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
