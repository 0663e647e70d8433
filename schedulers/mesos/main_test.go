package mesos

import (
	"testing"

	"github.com/egret-stream/egret/plugins/plugintest"
)

func TestMain(m *testing.M) {
	plugintest.Main(m, fakeEgretPkg)
}
