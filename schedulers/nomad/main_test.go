package nomad

import (
	"os"
	"strings"
	"testing"

	"github.com/egret-stream/egret/plugins/plugintest"
)

func TestMain(m *testing.M) {
	// The Nomad client reads NOMAD_* variables; the tests set their own.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "NOMAD_") {
			os.Unsetenv(k)
		}
	}
	plugintest.Main(m)
}
