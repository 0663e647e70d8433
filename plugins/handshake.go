package plugins

import (
	"fmt"

	plugin "github.com/hashicorp/go-plugin"
)

// ProtocolVersion is the version of Egret's plugin protocol. A host and a
// plugin built for different versions refuse each other at the handshake.
const ProtocolVersion = 1

// The plugin kinds. A plugin binary is named "egret-" + kind + "-" + name.
const (
	KindStateManager = "statemgr"
	KindUploader     = "uploader"
	KindPacking      = "packing"
	KindScheduler    = "scheduler"
	KindMetricsSink  = "metricssink"
	// KindCheckpointStorage is the kind of checkpoint storages.
	KindCheckpointStorage = "checkpointstorage"
)

// Kinds lists every plugin kind.
var Kinds = []string{KindStateManager, KindUploader, KindPacking, KindScheduler, KindMetricsSink, KindCheckpointStorage}

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
	case KindStateManager:
		p = &StateManagerPlugin{}
	case KindUploader:
		p = &UploaderPlugin{}
	case KindPacking:
		p = &PackingPlugin{}
	case KindScheduler:
		p = &SchedulerPlugin{}
	case KindMetricsSink:
		p = &MetricsSinkPlugin{}
	case KindCheckpointStorage:
		p = &CheckpointStoragePlugin{}
	default:
		return nil, fmt.Errorf("unknown plugin kind %q (want one of %v)", kind, Kinds)
	}
	return plugin.PluginSet{kind: p}, nil
}
