package localfs

import "github.com/egret-stream/egret/core/spi"

// configKeys are the config keys the localfs uploader reads, registered with
// its factory: conf derives the schema, the defaults, the validation and
// conf/REFERENCE.md from them.
var configKeys = []spi.Key{
	{Name: "egret.uploader.localfs.directory", Type: spi.KeyString, Required: true, Default: "${EGRET_HOME}/repository/topologies/${CLUSTER}/${ROLE}/${TOPOLOGY}",
		Doc: "Directory the topology package is copied to; containers fetch it with a file:// URI."},
}
