package plugins

import (
	"fmt"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/egret-stream/egret/core/spi"
)

// ProtocolVersion is the version of Egret's plugin protocol. A host and a
// plugin built for different versions refuse each other at the handshake.
const ProtocolVersion = 1

// Handshake is the go-plugin handshake of Egret plugins. The magic cookie
// is not a security measure: it makes a plugin binary started by hand say
// that it must be started by egret instead of hanging.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "EGRET_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "6a1f3c0e9b5d48e2a7c4f0b13d92e85c1f6b7a0d4c3e29f8",
}

// BinaryName returns the file name of the plugin binary of kind and name.
func BinaryName(kind, name string) string { return "egret-" + kind + "-" + name }

// PluginSet returns the go-plugin plugin set for the host side of kind: its
// single entry has no implementation. Plugins use Serve instead.
func PluginSet(kind string) (plugin.PluginSet, error) {
	var p plugin.Plugin
	switch kind {
	case spi.KindStateManager:
		p = &StateManagerPlugin{}
	case spi.KindUploader:
		p = &UploaderPlugin{}
	case spi.KindPacking:
		p = &PackingPlugin{}
	case spi.KindScheduler:
		p = &SchedulerPlugin{}
	case spi.KindMetricsSink:
		p = &MetricsSinkPlugin{}
	case spi.KindCheckpointStorage:
		p = &CheckpointStoragePlugin{}
	default:
		return nil, fmt.Errorf("unknown plugin kind %q (want one of %v)", kind, spi.Kinds)
	}
	return plugin.PluginSet{kind: p}, nil
}
