package localfs

import "github.com/egret-stream/egret/core/spi"

// configKeys are the config keys the localfs state manager reads, registered with
// its factory: conf derives the schema, the defaults, the validation and
// conf/REFERENCE.md from them.
var configKeys = []spi.Key{
	{Name: KeyPollInterval, Type: spi.KeyDuration, Default: "200ms", Check: spi.CheckPositive,
		Doc: "How often the localfs state manager polls watched nodes for changes."},
}
