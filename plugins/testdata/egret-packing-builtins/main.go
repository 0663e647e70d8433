// Command egret-packing-builtins serves a built-in packing algorithm as a
// plugin, to run the packing conformance suite across the plugin boundary.
// Installed as egret-packing-plugin-<algorithm>, it serves <algorithm>.
package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"

	_ "github.com/egret-stream/egret/packing/ffd"
	_ "github.com/egret-stream/egret/packing/rcrr"
	_ "github.com/egret-stream/egret/packing/roundrobin"
)

func main() {
	name := strings.TrimPrefix(filepath.Base(os.Args[0]), "egret-packing-plugin-")
	plugins.ServeBuiltin(spi.KindPacking, name)
}
