package plugins_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/zktest"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/statemgr/statemgrtest"
	smzk "github.com/egret-stream/egret/statemgr/zookeeper"
	egrethttp "github.com/egret-stream/egret/uploaders/http"
	"github.com/egret-stream/egret/uploaders/uploadertest"
)

// The state manager conformance suite, expiry included, against the
// ZooKeeper state manager served by plugin processes and a real ZooKeeper:
// every session is its own plugin process, and a crash is a SIGKILL of the
// plugin (its ZooKeeper session then expires).
func TestZooKeeperStateManagerConformancePlugin(t *testing.T) {
	addr := zktest.Start(t)
	dir := t.TempDir()
	plugintest.Install(t, dir, spi.KindStateManager, "zkplugin", plugintest.Build(t, zookeeperPlugin))
	l := plugintest.NewLoader(t, dir)
	cfg := spi.Config{
		smzk.KeyConnectionString: addr,
		smzk.KeyRootPath:         "/plugin-" + time.Now().Format("150405.000000"),
		smzk.KeySessionTimeout:   "3s",
	}
	newSession := func(t *testing.T) spi.StateManager {
		sm, err := l.LoadStateManager(testCtx(t), "zkplugin", cfg)
		if err != nil {
			t.Fatal(err)
		}
		return sm
	}
	t.Run("Run", func(t *testing.T) { statemgrtest.Run(t, newSession) })
	t.Run("Expiry", func(t *testing.T) {
		statemgrtest.RunExpiry(t, newSession, func(t *testing.T, sm spi.StateManager) { plugintest.Crash(t, sm) })
	})
}

// The uploader conformance suite against the http uploader served by a
// plugin process, uploading to the real package server.
func TestHTTPUploaderConformancePlugin(t *testing.T) {
	bin := plugintest.Build(t, httpPlugin)
	uploadertest.Run(t, func(t *testing.T) spi.Uploader {
		srv := httptest.NewServer(egrethttp.NewServer(t.TempDir(), zaptest.NewLogger(t)))
		t.Cleanup(srv.Close)
		dir := t.TempDir()
		plugintest.Install(t, dir, spi.KindUploader, "web", bin)
		u, err := plugintest.NewLoader(t, dir).LoadUploader(testCtx(t), "web", spi.Config{egrethttp.KeyURI: srv.URL + egrethttp.PathPrefix})
		if err != nil {
			t.Fatal(err)
		}
		return u
	})
}
