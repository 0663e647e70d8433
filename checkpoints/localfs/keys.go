package localfs

import "github.com/egret-stream/egret/core/spi"

// configKeys are the config keys the localfs checkpoint storage reads, registered with
// its factory: conf derives the schema, the defaults, the validation and
// conf/REFERENCE.md from them.
var configKeys = []spi.Key{
	{Name: "egret.checkpoint.localfs.root", Type: spi.KeyString, Default: "${EGRET_HOME}/checkpoints/${CLUSTER}",
		Doc: "Directory of the localfs checkpoint storage, as <root>/<topology>/<checkpoint id>/<task>.state; every container of a topology must see the same directory (one machine, or a shared file system mounted at the same path)."},
}
