package topology

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"
)

// DeliveryMode is the delivery guarantee of a topology.
type DeliveryMode string

// Delivery modes.
const (
	AtMostOnce      DeliveryMode = "at-most-once"
	AtLeastOnce     DeliveryMode = "at-least-once"
	EffectivelyOnce DeliveryMode = "effectively-once"
)

// ContainerMode says how a container runs its instances.
type ContainerMode string

// Container modes.
const (
	// ProcessPerInstance, the default (Heron's model), runs every
	// instance in its own process, connected to the container's stream
	// manager process through a Unix socket: a failing instance restarts
	// alone, and each has its own resource limits.
	ProcessPerInstance ContainerMode = "process-per-instance"
	// ProcessPerContainer runs the stream manager and all the container's
	// instances in one process, connected in memory: cheaper hops, but an
	// instance failure restarts the whole container and the container's
	// resources are one limit.
	ProcessPerContainer ContainerMode = "process-per-container"
)

// Topology and component configuration keys. Component-level values
// override topology-level ones for the keys marked "component".
const (
	// KeyContainers is the number of containers holding instances
	// (container 0, the topology manager's, is extra). Integer ≥ 1.
	KeyContainers = "topology.containers"
	// KeyDeliveryMode is one of the DeliveryMode values.
	KeyDeliveryMode = "topology.delivery.mode"
	// KeyContainerMode is one of the ContainerMode values (default
	// process-per-instance).
	KeyContainerMode = "topology.container.mode"
	// KeyMaxSpoutPending bounds the pending (emitted, not yet acked)
	// tuples per spout task in at-least-once mode; 0 means unbounded.
	// Component.
	KeyMaxSpoutPending = "topology.max.spout.pending"
	// KeyMessageTimeout is how long a spout tuple may stay pending before
	// it fails (Go duration). Component.
	KeyMessageTimeout = "topology.message.timeout"
	// KeyTickFrequency makes the runtime send a tick tuple to each bolt
	// task at this interval (Go duration; 0 disables). Component.
	KeyTickFrequency = "topology.tick.tuple.freq"
	// KeyCPU, KeyRAM and KeyDisk are the resources requested per instance
	// of a component (cores as a float; bytes, accepting KiB/MiB/GiB/KB/MB/
	// GB suffixes). Component.
	KeyCPU  = "topology.component.cpu"
	KeyRAM  = "topology.component.ram"
	KeyDisk = "topology.component.disk"
	// KeyContainerCPU, KeyContainerRAM and KeyContainerDisk bound what one
	// container may hold (optional).
	KeyContainerCPU  = "topology.container.max.cpu"
	KeyContainerRAM  = "topology.container.max.ram"
	KeyContainerDisk = "topology.container.max.disk"
	// KeyDebug enables per-tuple debug logging in instances.
	KeyDebug = "topology.debug"
	// KeyDropTuplesUponBackPressure makes stream managers drop the tuples
	// of their local spouts while back pressure is on, instead of
	// stopping to read them (Heron's option of the same name): spouts
	// keep running at full speed and what they emit beyond what the
	// topology can take is lost (counted). Boolean, default false.
	KeyDropTuplesUponBackPressure = "topology.droptuples.upon.backpressure"

	// Settings of shell (multilang) components; see docs/multilang.md.
	// All are component settings.

	// KeyMultilangPath lists directories, separated by ':', searched
	// first for a shell component's command and put first on its PATH
	// (a virtualenv's bin directory, for example); relative entries are
	// relative to the topology's resources directory.
	KeyMultilangPath = "topology.multilang.path"
	// KeyMultilangHeartbeatTimeout is how long a subprocess may stay
	// silent while an answer is awaited before it is killed and
	// restarted (Go duration; default 30s).
	KeyMultilangHeartbeatTimeout = "topology.multilang.heartbeat.timeout"
	// KeyMultilangStartTimeout bounds a subprocess's start and handshake
	// (Go duration; default 60s).
	KeyMultilangStartTimeout = "topology.multilang.start.timeout"
	// KeyMultilangQueueSize bounds, in messages, the queue toward a
	// subprocess and the queue of messages read from it (default 1024).
	KeyMultilangQueueSize = "topology.multilang.queue.size"
	// KeyMultilangMaxMessageBytes bounds one message from a subprocess
	// (bytes; default 4MiB).
	KeyMultilangMaxMessageBytes = "topology.multilang.max.message.bytes"

	// Effectively-once settings (docs/delivery.md).

	// KeyCheckpointInterval is how often the topology manager starts a
	// checkpoint (Go duration; default 5s).
	KeyCheckpointInterval = "topology.stateful.checkpoint.interval"
	// KeyAlignmentTimeout bounds how long a stream manager holds a task's
	// inputs while aligning the barriers of one checkpoint; beyond it the
	// checkpoint is aborted and the inputs released (Go duration; default
	// 30s). A checkpoint not complete within twice this time is aborted
	// by the topology manager.
	KeyAlignmentTimeout = "topology.stateful.alignment.timeout"
	// KeyCheckpointsKept is how many complete checkpoints are kept in
	// checkpoint storage (integer ≥ 1; default 2).
	KeyCheckpointsKept = "topology.stateful.checkpoints.keep"
	// KeyNotCheckpointed says why a component's state cannot be
	// checkpointed (one phrase); the topology builder records it from
	// the component's api.NotCheckpointed declaration. An
	// effectively-once topology with such a component is refused at
	// submission unless the component is marked stateless. Component.
	KeyNotCheckpointed = "topology.stateful.not.checkpointed"
	// KeyStateless marks a component as keeping no state outside the
	// checkpointed state API, so it may run in an effectively-once
	// topology although it declares KeyNotCheckpointed (the user's
	// word; the builder's SetStateless sets it). Boolean. Component.
	KeyStateless = "topology.stateful.stateless"

	// Health manager settings (docs/operations.md, "Health manager").

	// KeyHealthMgrEnabled starts the health manager in container 0: it
	// raises the parallelism of a component that causes sustained back
	// pressure. Boolean, default false.
	KeyHealthMgrEnabled = "topology.healthmgr.enabled"
	// KeyHealthMgrThreshold is how long one component must cause back
	// pressure without a break before the health manager acts (Go
	// duration; default 60s).
	KeyHealthMgrThreshold = "topology.healthmgr.backpressure.threshold"
	// KeyHealthMgrCooldown is the least time between two decisions (Go
	// duration; default 120s).
	KeyHealthMgrCooldown = "topology.healthmgr.cooldown"
	// KeyHealthMgrInterval is how often the health manager reads the
	// topology manager's metrics (Go duration; default 10s).
	KeyHealthMgrInterval = "topology.healthmgr.interval"
	// KeyHealthMgrMaxParallelism bounds the parallelism the health
	// manager gives a component (integer ≥ 1; default 8). Component.
	KeyHealthMgrMaxParallelism = "topology.healthmgr.max.parallelism"
	// KeyHealthMgrScaleFactor multiplies the parallelism of a component
	// the health manager scales up (number ≥ 1; default 2): the new
	// parallelism is max(current+1, ceil(current × factor)), capped by
	// the bound. Component.
	KeyHealthMgrScaleFactor = "topology.healthmgr.scale.factor"

	// KeyMaxParallelism is the number of key groups a component's keyed
	// state is partitioned into (core/keygroup), hence the most tasks it
	// may ever have: the fields grouping routes a key to the task owning
	// its key group (integer in [1, 32768]; default 128). Component.
	KeyMaxParallelism = "topology.max.parallelism"

	// KeyStateBackend names the state backend that holds the keyed
	// state and timers of every task (core/statebackend): heap (the
	// default; the task's memory) or pebble (an LSM tree on the
	// container's disk, for state larger than memory).
	KeyStateBackend = "topology.state.backend"
)

// Defaults of the typed settings.
const (
	DefaultMessageTimeout = 30 * time.Second
	DefaultContainers     = 1

	DefaultCheckpointInterval = 5 * time.Second
	DefaultAlignmentTimeout   = 30 * time.Second
	DefaultCheckpointsKept    = 2

	DefaultHealthMgrThreshold      = 60 * time.Second
	DefaultHealthMgrCooldown       = 120 * time.Second
	DefaultHealthMgrInterval       = 10 * time.Second
	DefaultHealthMgrMaxParallelism = 8
	DefaultHealthMgrScaleFactor    = 2.0

	DefaultMaxParallelism = keygroup.DefaultMaxParallelism
	DefaultStateBackend   = "heap"
)

type keyType int

const (
	typeInt keyType = iota + 1
	typeDuration
	typeFloat
	typeBytes
	typeBool
	typeDelivery
	typeContainerMode
	typeString
	typeStateBackend
)

type keySpec struct {
	typ       keyType
	component bool // may be set per component
	// runtime: may be changed in a running topology's runtime config
	// (egret update --runtime-config); running instances apply it live.
	runtime bool
	// fixed, when set, says why the setting cannot change in a running
	// topology at all, not even by a rolling restart (egret update
	// --restart); the other settings that are not runtime are read by
	// the instances and stream managers when they start.
	fixed string
	min   float64
	max   float64 // 0: no upper bound
}

// Why the settings in keySpecs cannot change in a running topology.
const (
	fixedPacking       = "it shapes the packing plan (the containers and their resources), fixed at submission; egret update --container-number changes the number of containers, anything else needs a kill and a new submission"
	fixedDelivery      = "the delivery mode is the topology's contract (acking, checkpointed state) for its whole life; kill the topology and submit it again"
	fixedCheckpoint    = "it changes the checkpoint semantics of an effectively-once topology, which the topology manager reads at its start; kill the topology and submit it again"
	fixedContainerMode = "the executors read it when a container starts; kill the topology and submit it again"
	fixedHealthMgr     = "the health manager reads it in container 0, which a rolling restart does not restart (it holds no topology code); kill the topology and submit it again"
	fixedStateBackend  = "the tasks' keyed state lives in it and its checkpoints are written in its format; kill the topology and submit it again"
	fixedKeyGroups     = "it is the number of key groups the component's keyed state is partitioned into, fixed for the topology's life; kill the topology and submit it again"
)

var keySpecs = map[string]keySpec{
	KeyContainers:      {typ: typeInt, min: 1, fixed: fixedPacking},
	KeyDeliveryMode:    {typ: typeDelivery, fixed: fixedDelivery},
	KeyContainerMode:   {typ: typeContainerMode, fixed: fixedContainerMode},
	KeyMaxSpoutPending: {typ: typeInt, component: true, runtime: true},
	KeyMessageTimeout:  {typ: typeDuration, component: true, runtime: true, min: 1},
	KeyTickFrequency:   {typ: typeDuration, component: true, runtime: true},
	KeyCPU:             {typ: typeFloat, component: true, fixed: fixedPacking},
	KeyRAM:             {typ: typeBytes, component: true, fixed: fixedPacking},
	KeyDisk:            {typ: typeBytes, component: true, fixed: fixedPacking},
	KeyContainerCPU:    {typ: typeFloat, fixed: fixedPacking},
	KeyContainerRAM:    {typ: typeBytes, fixed: fixedPacking},
	KeyContainerDisk:   {typ: typeBytes, fixed: fixedPacking},
	KeyDebug:           {typ: typeBool},

	KeyDropTuplesUponBackPressure: {typ: typeBool},

	KeyMultilangPath:             {typ: typeString, component: true},
	KeyMultilangHeartbeatTimeout: {typ: typeDuration, component: true, min: 1},
	KeyMultilangStartTimeout:     {typ: typeDuration, component: true, min: 1},
	KeyMultilangQueueSize:        {typ: typeInt, component: true, min: 1},
	KeyMultilangMaxMessageBytes:  {typ: typeBytes, component: true, min: 1},

	KeyCheckpointInterval: {typ: typeDuration, min: 1, fixed: fixedCheckpoint},
	KeyAlignmentTimeout:   {typ: typeDuration, min: 1, fixed: fixedCheckpoint},
	KeyCheckpointsKept:    {typ: typeInt, min: 1, fixed: fixedCheckpoint},
	KeyNotCheckpointed:    {typ: typeString, component: true, fixed: fixedCheckpoint},
	KeyStateless:          {typ: typeBool, component: true, fixed: fixedCheckpoint},

	KeyHealthMgrEnabled:        {typ: typeBool, fixed: fixedHealthMgr},
	KeyHealthMgrThreshold:      {typ: typeDuration, min: 1, fixed: fixedHealthMgr},
	KeyHealthMgrCooldown:       {typ: typeDuration, min: 1, fixed: fixedHealthMgr},
	KeyHealthMgrInterval:       {typ: typeDuration, min: 1, fixed: fixedHealthMgr},
	KeyHealthMgrMaxParallelism: {typ: typeInt, component: true, min: 1, fixed: fixedHealthMgr},
	KeyHealthMgrScaleFactor:    {typ: typeFloat, component: true, min: 1, fixed: fixedHealthMgr},

	KeyMaxParallelism: {typ: typeInt, component: true, min: 1, max: keygroup.Limit, fixed: fixedKeyGroups},
	KeyStateBackend:   {typ: typeStateBackend, fixed: fixedStateBackend},
}

// checkValue validates one config value; the returned message names the
// problem without the key.
func checkValue(key, value string, component bool) (string, bool) {
	spec, ok := keySpecs[key]
	if !ok {
		if strings.HasPrefix(key, "topology.") {
			return "unknown topology setting (user settings must not start with \"topology.\")", false
		}
		return "", true // user-defined settings are free-form
	}
	if component && !spec.component {
		return "is a topology-level setting and cannot be set per component", false
	}
	var n float64
	switch spec.typ {
	case typeInt:
		i, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return fmt.Sprintf("%q is not an integer", value), false
		}
		n = float64(i)
	case typeDuration:
		d, err := time.ParseDuration(value)
		if err != nil {
			return fmt.Sprintf("%q is not a duration (for example 500ms, 30s)", value), false
		}
		n = float64(d)
	case typeFloat:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("%q is not a number", value), false
		}
		n = f
	case typeBytes:
		b, err := ParseBytes(value)
		if err != nil {
			return err.Error(), false
		}
		n = float64(b)
	case typeBool:
		if _, err := strconv.ParseBool(value); err != nil {
			return fmt.Sprintf("%q is not true or false", value), false
		}
	case typeDelivery:
		switch DeliveryMode(value) {
		case AtMostOnce, AtLeastOnce, EffectivelyOnce:
		default:
			return fmt.Sprintf("%q is not a delivery mode (use %s, %s or %s)", value, AtMostOnce, AtLeastOnce, EffectivelyOnce), false
		}
	case typeStateBackend:
		// The backends register from init functions: the CLI links them
		// through catalog/, a topology binary through api/runner.
		if names := statebackend.Names(); !slices.Contains(names, value) {
			return fmt.Sprintf("%q is not a state backend (use one of: %s)", value, strings.Join(names, ", ")), false
		}
	case typeContainerMode:
		switch ContainerMode(value) {
		case ProcessPerInstance, ProcessPerContainer:
		default:
			return fmt.Sprintf("%q is not a container mode (use %s or %s)", value, ProcessPerInstance, ProcessPerContainer), false
		}
	}
	if n < spec.min || n < 0 {
		return fmt.Sprintf("%q is below the minimum %v", value, spec.min), false
	}
	if spec.max > 0 && n > spec.max {
		return fmt.Sprintf("%q is above the maximum %v", value, spec.max), false
	}
	return "", true
}

// RuntimeKeys lists the topology settings a running topology's runtime
// config may change, sorted.
func RuntimeKeys() []string {
	var out []string
	for k, s := range keySpecs {
		if s.runtime {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// CheckRuntimeConfig validates runtime config settings (egret update
// --runtime-config, the topology manager's /runtime-config) before they
// are applied: a topology setting must be one of RuntimeKeys with a value
// of its type; other keys are free-form user settings. An empty value
// deletes a setting and is always valid. The error names the first bad
// setting (in key order) and what is allowed.
func CheckRuntimeConfig(kv map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		v := kv[k]
		if v == "" {
			continue
		}
		spec, known := keySpecs[k]
		if known && !spec.runtime {
			if spec.fixed != "" {
				return fmt.Errorf("runtime setting %s cannot change in a running topology: %s", k, spec.fixed)
			}
			return fmt.Errorf("runtime setting %s: fixed when the topology is submitted, it does not change live; add --restart to apply it by a rolling restart of containers 1..N (the runtime config changes %s and user settings live)",
				k, strings.Join(RuntimeKeys(), ", "))
		}
		if msg, ok := checkValue(k, v, false); !ok {
			return fmt.Errorf("runtime setting %s: %s", k, msg)
		}
	}
	return nil
}

// SplitRestartConfig validates the settings of egret update
// --runtime-config --restart before anything is applied: the runtime ones
// (RuntimeKeys and user settings) as CheckRuntimeConfig, which apply
// live, and the fixed topology settings that the instances and stream
// managers read when they start, which a rolling restart applies (written
// into the topology definition). It returns the latter (an empty value
// deletes the setting); the error names the first setting (in key order)
// that is invalid or cannot change in a running topology at all, and why.
func SplitRestartConfig(kv map[string]string) (live, restart map[string]string, err error) {
	live, restart = map[string]string{}, map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		v := kv[k]
		spec, known := keySpecs[k]
		switch {
		case known && spec.fixed != "":
			return nil, nil, fmt.Errorf("setting %s cannot change in a running topology, not even with --restart: %s", k, spec.fixed)
		case !known && strings.HasPrefix(k, "topology."):
			return nil, nil, fmt.Errorf("setting %s: unknown topology setting (user settings must not start with \"topology.\")", k)
		}
		if v != "" {
			if msg, ok := checkValue(k, v, false); !ok {
				return nil, nil, fmt.Errorf("setting %s: %s", k, msg)
			}
		}
		if known && !spec.runtime {
			restart[k] = v
		} else {
			live[k] = v
		}
	}
	return live, restart, nil
}

// ParseBytes parses a byte size: a plain integer, or a number with one of
// the suffixes B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of
// 1024).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
	}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	// !(f >= 0) also rejects NaN; sizes of 2^63 bytes or more overflow int64.
	if err != nil || !(f >= 0) || f*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a byte size (for example 512MiB, 2GiB, 1048576)", s)
	}
	return int64(f * mult), nil
}

// Setting returns the effective value of key for component: the
// component's own value, else the topology's, else "".
func (t *Topology) Setting(component, key string) string {
	if c, ok := t.Component(component); ok {
		if v, ok := c.Config[key]; ok {
			return v
		}
	}
	return t.Config[key]
}

// DeliveryMode returns the topology's delivery mode (at-most-once when
// unset).
func (t *Topology) DeliveryMode() DeliveryMode {
	if m := t.Config[KeyDeliveryMode]; m != "" {
		return DeliveryMode(m)
	}
	return AtMostOnce
}

// ContainerMode returns how the containers run their instances.
func (t *Topology) ContainerMode() ContainerMode {
	if m := t.Config[KeyContainerMode]; m != "" {
		return ContainerMode(m)
	}
	return ProcessPerInstance
}

// DropTuplesUponBackPressure reports whether stream managers drop the
// tuples of local spouts while back pressure is on.
func (t *Topology) DropTuplesUponBackPressure() bool {
	b, _ := strconv.ParseBool(t.Config[KeyDropTuplesUponBackPressure])
	return b
}

// Containers returns the configured number of containers (at least 1).
func (t *Topology) Containers() int {
	n, err := strconv.Atoi(t.Config[KeyContainers])
	if err != nil || n < 1 {
		return DefaultContainers
	}
	return n
}

// MaxSpoutPending returns the max pending tuples of a spout (0: unbounded).
func (t *Topology) MaxSpoutPending(component string) int {
	n, _ := strconv.Atoi(t.Setting(component, KeyMaxSpoutPending))
	return n
}

// MessageTimeout returns the message timeout of a spout.
func (t *Topology) MessageTimeout(component string) time.Duration {
	d, err := time.ParseDuration(t.Setting(component, KeyMessageTimeout))
	if err != nil || d <= 0 {
		return DefaultMessageTimeout
	}
	return d
}

// CheckpointInterval returns how often checkpoints start (effectively-once).
func (t *Topology) CheckpointInterval() time.Duration {
	return t.durationSetting(KeyCheckpointInterval, DefaultCheckpointInterval)
}

// AlignmentTimeout returns the barrier alignment bound (effectively-once).
func (t *Topology) AlignmentTimeout() time.Duration {
	return t.durationSetting(KeyAlignmentTimeout, DefaultAlignmentTimeout)
}

// CheckpointsKept returns how many complete checkpoints storage keeps.
func (t *Topology) CheckpointsKept() int {
	n, err := strconv.Atoi(t.Setting("", KeyCheckpointsKept))
	if err != nil || n < 1 {
		return DefaultCheckpointsKept
	}
	return n
}

func (t *Topology) durationSetting(key string, def time.Duration) time.Duration {
	d, err := time.ParseDuration(t.Setting("", key))
	if err != nil || d <= 0 {
		return def
	}
	return d
}

// TickFrequency returns the tick tuple interval of a bolt (0: none).
func (t *Topology) TickFrequency(component string) time.Duration {
	d, _ := time.ParseDuration(t.Setting(component, KeyTickFrequency))
	return d
}

// HealthMgr are a topology's health manager settings.
type HealthMgr struct {
	Enabled bool
	// Threshold, Cooldown and Interval: see KeyHealthMgrThreshold,
	// KeyHealthMgrCooldown and KeyHealthMgrInterval.
	Threshold, Cooldown, Interval time.Duration
}

// HealthMgr returns the topology's health manager settings, with the
// defaults for what is not set.
func (t *Topology) HealthMgr() HealthMgr {
	on, _ := strconv.ParseBool(t.Config[KeyHealthMgrEnabled])
	return HealthMgr{
		Enabled:   on,
		Threshold: t.durationSetting(KeyHealthMgrThreshold, DefaultHealthMgrThreshold),
		Cooldown:  t.durationSetting(KeyHealthMgrCooldown, DefaultHealthMgrCooldown),
		Interval:  t.durationSetting(KeyHealthMgrInterval, DefaultHealthMgrInterval),
	}
}

// HealthMgrMaxParallelism returns the most tasks the health manager gives
// component.
func (t *Topology) HealthMgrMaxParallelism(component string) int {
	n, err := strconv.Atoi(t.Setting(component, KeyHealthMgrMaxParallelism))
	if err != nil || n < 1 {
		return DefaultHealthMgrMaxParallelism
	}
	return n
}

// MaxParallelism returns the number of key groups of component (its
// topology.max.parallelism, else DefaultMaxParallelism).
func (t *Topology) MaxParallelism(component string) int {
	n, err := strconv.Atoi(t.Setting(component, KeyMaxParallelism))
	if err != nil || n < 1 || n > keygroup.Limit {
		return DefaultMaxParallelism
	}
	return n
}

// StateBackend returns the name of the topology's state backend
// (topology.state.backend, else DefaultStateBackend).
func (t *Topology) StateBackend() string {
	if v := t.Config[KeyStateBackend]; v != "" {
		return v
	}
	return DefaultStateBackend
}

// HealthMgrScaleFactor returns the factor the health manager multiplies
// component's parallelism by.
func (t *Topology) HealthMgrScaleFactor(component string) float64 {
	f, err := strconv.ParseFloat(t.Setting(component, KeyHealthMgrScaleFactor), 64)
	if err != nil || f < 1 || math.IsInf(f, 0) {
		return DefaultHealthMgrScaleFactor
	}
	return f
}
