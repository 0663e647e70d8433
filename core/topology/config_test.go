package topology

import (
	"maps"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1048576", 1 << 20},
		{" 42 ", 42},
		{"12B", 12},
		{"1KB", 1000},
		{"1KiB", 1024},
		{"512MiB", 512 << 20},
		{"512 MiB", 512 << 20},
		{"1.5GiB", 3 << 29},
		{"2GB", 2e9},
		{"1TiB", 1 << 40},
		{"3TB", 3e12},
		{"0.5KiB", 512},
		{"8EiB", -1}, // unknown suffix
		{"", -1},
		{"MiB", -1},
		{"-1", -1},
		{"-1MiB", -1},
		{"ten", -1},
		{"1 0", -1},
		{"NaN", -1},
		{"Inf", -1},
		{"+Inf", -1},
		{"-Inf", -1},
		{"1e30", -1},       // overflows int64
		{"9000000TiB", -1}, // overflows int64
		{"1e3", 1000},      // scientific notation is a number
	}
	for _, tc := range tests {
		got, err := ParseBytes(tc.in)
		if tc.want < 0 {
			if err == nil {
				t.Errorf("ParseBytes(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	// float64 cannot hold MaxInt64 exactly: an error is fine, a negative
	// size (overflow) is not.
	for _, s := range []string{"9223372036854775807", "8388608TiB"} {
		if got, err := ParseBytes(s); err == nil && (got < 0 || got > math.MaxInt64-1) {
			t.Errorf("ParseBytes(%q) = %d, want an error or a positive size", s, got)
		}
	}
}

func TestSettings(t *testing.T) {
	topo := validTopology()
	if got := topo.DeliveryMode(); got != AtMostOnce {
		t.Errorf("default DeliveryMode = %v", got)
	}
	if got := topo.Containers(); got != DefaultContainers {
		t.Errorf("default Containers = %d", got)
	}
	if got := topo.MessageTimeout("sentence"); got != DefaultMessageTimeout {
		t.Errorf("default MessageTimeout = %v", got)
	}
	if got := topo.TickFrequency("count"); got != 0 {
		t.Errorf("default TickFrequency = %v", got)
	}
	if got := topo.MaxSpoutPending("sentence"); got != 0 {
		t.Errorf("default MaxSpoutPending = %v", got)
	}

	topo.Config = map[string]string{
		KeyDeliveryMode: string(EffectivelyOnce), KeyContainers: "4", KeyMessageTimeout: "10s",
		KeyTickFrequency: "2s", KeyMaxSpoutPending: "50", "user": "topo",
	}
	topo.Components[0].Config = map[string]string{KeyMessageTimeout: "3s", KeyMaxSpoutPending: "7", "user": "spout"}
	topo.Components[2].Config = map[string]string{KeyTickFrequency: "250ms"}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"DeliveryMode", topo.DeliveryMode(), EffectivelyOnce},
		{"Containers", topo.Containers(), 4},
		{"MessageTimeout(sentence)", topo.MessageTimeout("sentence"), 3 * time.Second},
		{"MessageTimeout(split)", topo.MessageTimeout("split"), 10 * time.Second},
		{"MaxSpoutPending(sentence)", topo.MaxSpoutPending("sentence"), 7},
		{"MaxSpoutPending(unknown)", topo.MaxSpoutPending("nope"), 50},
		{"TickFrequency(count)", topo.TickFrequency("count"), 250 * time.Millisecond},
		{"TickFrequency(split)", topo.TickFrequency("split"), 2 * time.Second},
		{"Setting(sentence, user)", topo.Setting("sentence", "user"), "spout"},
		{"Setting(split, user)", topo.Setting("split", "user"), "topo"},
		{"Setting(split, missing)", topo.Setting("split", "missing"), ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestTopologyAccessors(t *testing.T) {
	topo := everyGroupingTopology()
	if got, want := topo.Spouts(), []string{"src"}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("Spouts = %v", got)
	}
	if got := topo.Bolts(); len(got) != 8 || got[0] != "shuffle" || got[7] != "local" {
		t.Errorf("Bolts = %v", got)
	}
	subs := topo.Subscribers("src", DefaultStream)
	var names []string
	for _, s := range subs {
		names = append(names, s.Bolt)
	}
	want := []string{"all", "custom", "fields", "none", "shuffle"}
	if len(names) != len(want) {
		t.Fatalf("Subscribers(src, default) = %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("Subscribers(src, default) = %v, want %v (sorted by bolt)", names, want)
		}
	}
	if p := topo.Parallelism(); p["fields"] != 4 || p["src"] != 3 || len(p) != len(topo.Components) {
		t.Errorf("Parallelism = %v", p)
	}
	if c, ok := topo.Component("custom"); !ok || c.Inputs[0].CustomName != "by-key" {
		t.Errorf("Component(custom) = %+v, %v", c, ok)
	}
	if _, ok := topo.Component("missing"); ok {
		t.Error("Component(missing) found something")
	}
	src, _ := topo.Component("src")
	if s, ok := src.Output("direct"); !ok || !s.Direct {
		t.Errorf("Output(direct) = %+v, %v", s, ok)
	}
	if _, ok := src.Output("nope"); ok {
		t.Error("Output(nope) found something")
	}
	for g, name := range groupingNames {
		if g.String() != name {
			t.Errorf("%d.String() = %q", int(g), g.String())
		}
	}
	if Spout.String() != "spout" || Bolt.String() != "bolt" || Kind(9).String() != "kind(9)" {
		t.Error("Kind.String")
	}
}

func TestCheckRuntimeConfig(t *testing.T) {
	cases := []struct {
		kv   map[string]string
		want string // "" = valid
	}{
		{kv: map[string]string{KeyMaxSpoutPending: "100", KeyMessageTimeout: "45s", KeyTickFrequency: "0s", "count.rate": "abc"}},
		{kv: map[string]string{KeyMaxSpoutPending: ""}}, // deletes the setting
		{kv: map[string]string{KeyMaxSpoutPending: "abc"}, want: `runtime setting topology.max.spout.pending: "abc" is not an integer`},
		{kv: map[string]string{KeyMaxSpoutPending: "-1"}, want: `runtime setting topology.max.spout.pending: "-1" is below the minimum 0`},
		{kv: map[string]string{KeyMessageTimeout: "30"}, want: `runtime setting topology.message.timeout: "30" is not a duration (for example 500ms, 30s)`},
		{kv: map[string]string{KeyMessageTimeout: "0s"}, want: `runtime setting topology.message.timeout: "0s" is below the minimum 1`},
		{kv: map[string]string{KeyContainers: "3"}, want: "runtime setting topology.containers cannot change in a running topology: it shapes the packing plan"},
		{kv: map[string]string{KeyDeliveryMode: "at-least-once"}, want: "runtime setting topology.delivery.mode cannot change in a running topology: the delivery mode is the topology's contract"},
		{kv: map[string]string{KeyDebug: "true"}, want: "runtime setting topology.debug: fixed when the topology is submitted, it does not change live; add --restart to apply it by a rolling restart of containers 1..N " +
			"(the runtime config changes topology.max.spout.pending, topology.message.timeout, topology.tick.tuple.freq and user settings live)"},
		{kv: map[string]string{"topology.max.spout.pendng": "5"}, want: `runtime setting topology.max.spout.pendng: unknown topology setting`},
		{kv: map[string]string{"a": "1", KeyTickFrequency: "often", "z": "2"}, want: `runtime setting topology.tick.tuple.freq: "often" is not a duration`},
	}
	for _, tc := range cases {
		err := CheckRuntimeConfig(tc.kv)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.kv, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%v: %v, want %q", tc.kv, err, tc.want)
		}
	}
}

// TestSplitRestartConfig: egret update --restart takes the live settings
// and the fixed ones that restarted processes read, and refuses the ones
// that cannot change in a running topology with the reason.
func TestSplitRestartConfig(t *testing.T) {
	live, restart, err := SplitRestartConfig(map[string]string{KeyMultilangHeartbeatTimeout: "45s", KeyDebug: "", KeyMaxSpoutPending: "10", "count.rate": "5"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{KeyMultilangHeartbeatTimeout: "45s", KeyDebug: ""}; !maps.Equal(restart, want) {
		t.Errorf("restart settings %v, want %v", restart, want)
	}
	if want := map[string]string{KeyMaxSpoutPending: "10", "count.rate": "5"}; !maps.Equal(live, want) {
		t.Errorf("live settings %v, want %v", live, want)
	}
	for _, tc := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{KeyDeliveryMode: "at-most-once"}, "setting topology.delivery.mode cannot change in a running topology, not even with --restart: the delivery mode"},
		{map[string]string{KeyDeliveryMode: ""}, "setting topology.delivery.mode cannot change in a running topology, not even with --restart"},
		{map[string]string{KeyRAM: "1GiB"}, "setting topology.component.ram cannot change in a running topology, not even with --restart: it shapes the packing plan"},
		{map[string]string{KeyCheckpointInterval: "1s"}, "setting topology.stateful.checkpoint.interval cannot change in a running topology, not even with --restart: it changes the checkpoint semantics"},
		{map[string]string{KeyHealthMgrEnabled: "true"}, "setting topology.healthmgr.enabled cannot change in a running topology, not even with --restart: the health manager reads it in container 0"},
		{map[string]string{KeyMultilangHeartbeatTimeout: "0s"}, `setting topology.multilang.heartbeat.timeout: "0s" is below the minimum 1`},
		{map[string]string{"topology.debugg": "true"}, "setting topology.debugg: unknown topology setting"},
	} {
		if _, _, err := SplitRestartConfig(tc.kv); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.kv, err, tc.want)
		}
	}
}

func TestCheckpointSettings(t *testing.T) {
	topo := &Topology{Name: "t", Config: map[string]string{}}
	if topo.CheckpointInterval() != DefaultCheckpointInterval || topo.AlignmentTimeout() != DefaultAlignmentTimeout || topo.CheckpointsKept() != DefaultCheckpointsKept {
		t.Fatalf("defaults: %v %v %v", topo.CheckpointInterval(), topo.AlignmentTimeout(), topo.CheckpointsKept())
	}
	topo.Config = map[string]string{KeyCheckpointInterval: "250ms", KeyAlignmentTimeout: "3s", KeyCheckpointsKept: "4"}
	if topo.CheckpointInterval() != 250*time.Millisecond || topo.AlignmentTimeout() != 3*time.Second || topo.CheckpointsKept() != 4 {
		t.Fatalf("set: %v %v %v", topo.CheckpointInterval(), topo.AlignmentTimeout(), topo.CheckpointsKept())
	}
	for k, v := range map[string]string{KeyCheckpointInterval: "0s", KeyAlignmentTimeout: "soon", KeyCheckpointsKept: "0"} {
		if msg, ok := checkValue(k, v, false); ok {
			t.Errorf("%s=%s accepted (%s)", k, v, msg)
		}
	}
}

func TestHealthMgrSettings(t *testing.T) {
	topo := &Topology{Name: "t", Config: map[string]string{}, Components: []Component{{Name: "b", Config: map[string]string{}}}}
	h := topo.HealthMgr()
	if h.Enabled || h.Threshold != DefaultHealthMgrThreshold || h.Cooldown != DefaultHealthMgrCooldown || h.Interval != DefaultHealthMgrInterval {
		t.Fatalf("defaults: %+v", h)
	}
	if topo.HealthMgrMaxParallelism("b") != DefaultHealthMgrMaxParallelism || topo.HealthMgrScaleFactor("b") != DefaultHealthMgrScaleFactor {
		t.Fatalf("default bound/factor: %d %v", topo.HealthMgrMaxParallelism("b"), topo.HealthMgrScaleFactor("b"))
	}
	topo.Config = map[string]string{KeyHealthMgrEnabled: "true", KeyHealthMgrThreshold: "5s", KeyHealthMgrCooldown: "7s", KeyHealthMgrInterval: "1s",
		KeyHealthMgrMaxParallelism: "4", KeyHealthMgrScaleFactor: "1.5"}
	topo.Components[0].Config = map[string]string{KeyHealthMgrMaxParallelism: "3"}
	h = topo.HealthMgr()
	if !h.Enabled || h.Threshold != 5*time.Second || h.Cooldown != 7*time.Second || h.Interval != time.Second {
		t.Fatalf("set: %+v", h)
	}
	if topo.HealthMgrMaxParallelism("b") != 3 || topo.HealthMgrMaxParallelism("other") != 4 || topo.HealthMgrScaleFactor("b") != 1.5 {
		t.Fatalf("bound/factor: %d %d %v", topo.HealthMgrMaxParallelism("b"), topo.HealthMgrMaxParallelism("other"), topo.HealthMgrScaleFactor("b"))
	}
	for k, v := range map[string]string{KeyHealthMgrEnabled: "yes please", KeyHealthMgrThreshold: "0s", KeyHealthMgrCooldown: "-1s",
		KeyHealthMgrInterval: "often", KeyHealthMgrMaxParallelism: "0", KeyHealthMgrScaleFactor: "0.5"} {
		if msg, ok := checkValue(k, v, false); ok {
			t.Errorf("%s=%s accepted (%s)", k, v, msg)
		}
	}
	if _, ok := checkValue(KeyHealthMgrThreshold, "5s", true); ok {
		t.Errorf("a topology-level health manager key accepted per component")
	}
	if _, ok := checkValue(KeyHealthMgrMaxParallelism, "5", true); !ok {
		t.Errorf("the per-component bound refused")
	}
}

func TestMaxParallelism(t *testing.T) {
	topo := &Topology{Name: "t", Config: map[string]string{}, Components: []Component{{Name: "b"}, {Name: "c", Config: map[string]string{KeyMaxParallelism: "16"}}}}
	if n := topo.MaxParallelism("b"); n != DefaultMaxParallelism || DefaultMaxParallelism != 128 {
		t.Fatalf("default max parallelism %d", n)
	}
	topo.Config[KeyMaxParallelism] = "512"
	if topo.MaxParallelism("b") != 512 || topo.MaxParallelism("c") != 16 {
		t.Fatalf("max parallelism b %d, c %d", topo.MaxParallelism("b"), topo.MaxParallelism("c"))
	}
	for _, v := range []string{"0", "32769", "many"} {
		if msg, ok := checkValue(KeyMaxParallelism, v, true); ok {
			t.Errorf("%s=%s accepted (%s)", KeyMaxParallelism, v, msg)
		}
	}
	if _, _, err := SplitRestartConfig(map[string]string{KeyMaxParallelism: "256"}); err == nil {
		t.Errorf("the max parallelism may change in a running topology")
	}
}

func TestStateBackend(t *testing.T) {
	topo := &Topology{Name: "t", Config: map[string]string{}}
	if topo.StateBackend() != "heap" {
		t.Fatalf("default state backend %q", topo.StateBackend())
	}
	topo.Config[KeyStateBackend] = "pebble"
	if topo.StateBackend() != "pebble" {
		t.Fatalf("state backend %q", topo.StateBackend())
	}
	for _, v := range []string{"heap", "pebble"} {
		if msg, ok := checkValue(KeyStateBackend, v, false); !ok {
			t.Errorf("%s=%s refused: %s", KeyStateBackend, v, msg)
		}
	}
	msg, ok := checkValue(KeyStateBackend, "rocksdb", false)
	if ok || !strings.Contains(msg, "heap, pebble") {
		t.Errorf("%s=rocksdb: %v %q (want the valid names)", KeyStateBackend, ok, msg)
	}
	if _, ok := checkValue(KeyStateBackend, "heap", true); ok {
		t.Errorf("%s accepted per component", KeyStateBackend)
	}
	if _, _, err := SplitRestartConfig(map[string]string{KeyStateBackend: "pebble"}); err == nil {
		t.Errorf("the state backend may change in a running topology")
	}
}
