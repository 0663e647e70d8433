package conf

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/egret-stream/egret/core/spi"
)

// Key describes one configuration key of the schema: a core key of conf's
// own table, or a key a backend declared when it registered (spi.Key).
type Key struct {
	spi.Key
	// File is the file the key belongs in, without .yaml ("statemgr").
	File string
	// Backend is "" for a core key, or "<kind>/<name>" for a key read only
	// by one backend, which gets its default only when that backend is
	// selected ("scheduler/nomad", "metricssink/prometheus").
	Backend string
}

// Files are the config file names of a cluster, in load order.
var Files = []string{"client", "scheduler", "packing", "statemgr", "uploader", "internals", "metrics_sinks"}

// kindFiles names the file that holds the keys of each kind's backends.
var kindFiles = map[string]string{
	spi.KindScheduler:         "scheduler",
	spi.KindStateManager:      "statemgr",
	spi.KindUploader:          "uploader",
	spi.KindPacking:           "packing",
	spi.KindMetricsSink:       "metrics_sinks",
	spi.KindCheckpointStorage: "internals",
}

// pluginNamespace is a key prefix under which the next segment names a
// backend of kind: egret.statemgr.<name>.*, egret.<scheduler>.*, ...
type pluginNamespace struct {
	prefix string // "egret.statemgr"
	kind   string // the backend kind its names select
}

var pluginNamespaces = []pluginNamespace{
	{"egret.scheduler", spi.KindScheduler},
	{"egret.statemgr", spi.KindStateManager},
	{"egret.uploader", spi.KindUploader},
	{"egret.packing", spi.KindPacking},
	{"egret.metrics", spi.KindMetricsSink},
	{"egret.checkpoint", spi.KindCheckpointStorage},
	{"egret", spi.KindScheduler},
}

// backendKeys maps each backend kind to the key that selects it (the
// metrics sinks are listed by keySinks).
var backendKeys = []struct{ kind, key string }{
	{spi.KindScheduler, "egret.scheduler"},
	{spi.KindStateManager, "egret.statemgr"},
	{spi.KindUploader, "egret.uploader"},
	{spi.KindPacking, "egret.packing"},
	{spi.KindCheckpointStorage, "egret.checkpoint.storage"},
}

// keySinks lists the metrics sinks.
const keySinks = "egret.metrics.sinks"

// Builtins returns the names of the built-in backends of kind (a spi.Kind
// constant), sorted: the backends registered with core/spi, which the
// catalog package links in. Any other name of a backend kind is an
// external plugin binary egret-<kind>-<name>.
func Builtins(kind string) []string { return spi.BackendNames(kind) }

// builtinsMark in the doc of a key that selects a backend is replaced by
// the names of the built-in backends of its kind.
const builtinsMark = "{builtins}"

type fileKeys struct {
	file string
	keys []spi.Key
}

// coreKeys are the keys conf, the launcher and the daemons read, by file.
// A backend's own keys are not here: it registers them with its factory.
var coreKeys = []fileKeys{
	{"client", []spi.Key{
		{Name: "egret.config.role.required", Type: spi.KeyBool, Default: "false",
			Doc: "The role must be given (cluster/role[/env]); otherwise it defaults to $USER."},
		{Name: "egret.config.env.required", Type: spi.KeyBool, Default: "false",
			Doc: "The environment must be given (cluster/role/env); otherwise it defaults to \"default\"."},
		{Name: "egret.kill.drain.timeout", Type: spi.KeyDuration, Default: "30s",
			Doc: "How long egret kill drains a running topology before it stops it: the spouts are deactivated and kill waits until no tuple is in flight (no pending roots, empty queues, counts no longer moving; seen through the metrics, so it takes at least two egret.metrics.export.interval). 0s: stop at once, like --now."},
		{Name: "egret.deactivate.drain.timeout", Type: spi.KeyDuration, Default: "30s",
			Doc: "How long egret deactivate waits, after deactivating the spouts, until no tuple is in flight, as egret kill's drain does (egret.kill.drain.timeout): when it returns, every root was acked or failed. 0s: return at once, like --now."},
		{Name: "egret.update.drain.timeout", Type: spi.KeyDuration, Default: "30s",
			Doc: "How long egret update (and apply) drains a running topology it rescales, between the deactivation of its spouts and the restart of its instances (with --restart: before each container restarts), as egret kill does (egret.kill.drain.timeout). 0s: no drain."},
		{Name: "egret.upgrade.drain.timeout", Type: spi.KeyDuration, Default: "30s",
			Doc: "How long egret upgrade (and its rollback) drains a running topology before each container restarts, between the deactivation of its spouts and the restart, as egret kill does (egret.kill.drain.timeout); the spouts are activated again once the container is healthy. 0s: no drain, the containers restart while tuples flow."},
		{Name: "egret.savepoint.directory", Type: spi.KeyString, Default: "${EGRET_HOME}/savepoints/${CLUSTER}",
			Doc: "Directory of savepoints: where egret savepoint and egret kill --savepoint write when no URI is given, and where egret savepoints finds a savepoint given by name; a path or file:///path (localfs) or hdfs://namenode:port/path (docs/savepoints.md)."},
		{Name: "egret.plugin.directory", Type: spi.KeyString, Default: "${EGRET_HOME}/plugins",
			Doc: "Directory searched for external plugin binaries (egret-scheduler-<name>, ...)."},
		{Name: "egret.package.goos", Type: spi.KeyString, Default: "", Check: checkGOOS,
			Doc: "GOOS the topology binary is built for when a Go package is submitted; empty: the machine running the CLI."},
		{Name: "egret.package.goarch", Type: spi.KeyString, Default: "", Check: checkGOARCH,
			Doc: "GOARCH the topology binary is built for; empty: the machine running the CLI."},
		{Name: "egret.package.core.uri", Type: spi.KeyString, Default: "",
			Doc: "URI the containers download the egret binary (or a .tar.gz/.zip holding it) from; empty: the egret in the topology package (egret.package.core.bundle), else the scheduler's own (local: the egret running the command; nomad's docker driver and kubernetes: the image's)."},
		{Name: "egret.package.core.bundle", Type: spi.KeyBool, Default: "false",
			Doc: "Put the submitting egret binary into the topology package (as egret) when egret.package.core.uri is empty, for containers with no egret of their own (nomad, kubernetes); that egret must be built for egret.package.goos/goarch."},
	}},
	{"scheduler", []spi.Key{
		{Name: "egret.scheduler", Type: spi.KeyString, Required: true, Check: checkName,
			Doc: "Scheduler backend: a built-in name ({builtins}) or an external plugin egret-scheduler-<name>."},
		{Name: "egret.scheduler.local.working.directory", Type: spi.KeyString, Default: "${EGRET_HOME}/topologies/${CLUSTER}/${ROLE}/${TOPOLOGY}",
			Doc: "Working directory of a topology on the machine running the scheduler (containers of the local scheduler live below it; kill removes it). It must name the topology (${TOPOLOGY}) and have no `..` element."},
	}},
	{"statemgr", []spi.Key{
		{Name: "egret.statemgr", Type: spi.KeyString, Required: true, Check: checkName,
			Doc: "State manager backend: a built-in name ({builtins}) or an external plugin egret-statemgr-<name>."},
		{Name: "egret.statemgr.root.path", Type: spi.KeyString, Required: true,
			Doc: "Root of the state tree: a directory for localfs, a znode path for zookeeper."},
	}},
	{"uploader", []spi.Key{
		{Name: "egret.uploader", Type: spi.KeyString, Required: true, Check: checkName,
			Doc: "Uploader backend: a built-in name ({builtins}) or an external plugin egret-uploader-<name>."},
	}},
	{"packing", []spi.Key{
		{Name: "egret.packing", Type: spi.KeyString, Default: "roundrobin", Check: checkName,
			Doc: "Packing algorithm: roundrobin (round robin), ffd (first-fit decreasing), rcrr (resource-compliant round robin), or an external plugin egret-packing-<name>."},
		{Name: "egret.packing.default.instance.cpu", Type: spi.KeyFloat, Default: "1.0", Check: spi.CheckPositive,
			Doc: "CPU cores of an instance whose component sets none."},
		{Name: "egret.packing.default.instance.ram", Type: spi.KeyBytes, Default: "1GiB", Check: spi.CheckPositive,
			Doc: "RAM of an instance whose component sets none."},
		{Name: "egret.packing.default.instance.disk", Type: spi.KeyBytes, Default: "1GiB", Check: spi.CheckPositive,
			Doc: "Disk of an instance whose component sets none."},
		{Name: "egret.packing.padding.percentage", Type: spi.KeyInt, Default: "10", Check: checkPercent,
			Doc: "Container padding as a percentage of its capacity (ffd, rcrr); the larger of this and the fixed padding applies."},
		{Name: "egret.packing.padding.cpu", Type: spi.KeyFloat, Default: "1.0", Check: spi.CheckNonNegative,
			Doc: "Fixed CPU padding per container for the stream manager and metrics manager."},
		{Name: "egret.packing.padding.ram", Type: spi.KeyBytes, Default: "1GiB", Check: spi.CheckNonNegative,
			Doc: "Fixed RAM padding per container for the stream manager and metrics manager."},
		{Name: "egret.packing.padding.disk", Type: spi.KeyBytes, Default: "1GiB", Check: spi.CheckNonNegative,
			Doc: "Fixed disk padding per container (logs, packages)."},
		{Name: "egret.packing.overhead.cpu", Type: spi.KeyFloat, Default: "0.5", Check: spi.CheckNonNegative,
			Doc: "CPU the daemons of a container (executor, stream manager, metrics manager) need; a container reserves the larger of this and its cpu padding (docs/concepts.md, \"Container size\")."},
		{Name: "egret.packing.overhead.ram", Type: spi.KeyBytes, Default: "144MiB", Check: spi.CheckNonNegative,
			Doc: "RAM the daemons of a container need besides their queues: 48MiB each for the executor, stream manager and metrics manager (docs/backpressure.md, \"Memory bound\"). A container reserves the larger of its ram padding and this plus egret.packing.overhead.ram.per.instance per instance."},
		{Name: "egret.packing.overhead.ram.per.instance", Type: spi.KeyBytes, Default: "16MiB", Check: spi.CheckNonNegative,
			Doc: "RAM the stream manager needs per local instance: its queue toward it (egret.stmgr.buffer.max.bytes) counted twice for the garbage collector."},
	}},
	{"internals", []spi.Key{
		{Name: "egret.checkpoint.storage", Type: spi.KeyString, Default: "localfs", Check: checkName,
			Doc: "Checkpoint storage of effectively-once topologies, where each container's checkpoint manager keeps its tasks' state: a built-in name ({builtins}) or an external plugin egret-checkpointstorage-<name> in egret.plugin.directory (installed on every node that runs containers)."},
		{Name: "egret.checkpoint.timeout", Type: spi.KeyDuration, Default: "2m", Check: spi.CheckPositive,
			Doc: "Longest time one save, load or clean of the checkpoint manager may take in the storage; a slower one is answered with an error."},
		{Name: "egret.stmgr.buffer.high.watermark.bytes", Type: spi.KeyBytes, Default: "1MiB", Check: spi.CheckPositive,
			Doc: "Bytes queued toward one instance or peer at which a stream manager starts back pressure (stops reading its spouts and tells its peers to); at most half of egret.stmgr.buffer.max.bytes."},
		{Name: "egret.stmgr.buffer.low.watermark.bytes", Type: spi.KeyBytes, Default: "512KiB", Check: spi.CheckPositive,
			Doc: "Back pressure is released when every queue is below this; below the high watermark."},
		{Name: "egret.stmgr.socket.buffer.bytes", Type: spi.KeyBytes, Default: "256KiB", Check: spi.CheckNonNegative,
			Doc: "Kernel send and receive buffers of the stream managers' data connections; 0: the kernel sizes them (up to several MiB per connection on Linux). Bytes in kernel buffers are invisible to the watermarks, so they are kept small."},
		{Name: "egret.stmgr.ack.ledger.max.roots", Type: spi.KeyInt, Default: "262144", Check: spi.CheckPositive,
			Doc: "At-least-once: pending roots each spout task's ledger (in its container's stream manager) may hold; a root registered beyond it fails at once and the spout replays it."},
		{Name: "egret.stmgr.batch.max.bytes", Type: spi.KeyBytes, Default: "64KiB", Check: spi.CheckPositive,
			Doc: "A tuple batch is written when it reaches this size (or at once when the connection is idle)."},
		{Name: "egret.stmgr.heartbeat.interval", Type: spi.KeyDuration, Default: "1s", Check: spi.CheckPositive,
			Doc: "Interval of stream manager heartbeats to the tmanager."},
		{Name: "egret.stmgr.buffer.max.bytes", Type: spi.KeyBytes, Default: "8MiB", Check: spi.CheckPositive,
			Doc: "Bound of a stream manager's queue toward one destination (instance or peer stream manager)."},
		{Name: "egret.wire.max.frame.bytes", Type: spi.KeyBytes, Default: "16MiB", Check: spi.CheckPositive,
			Doc: "Largest frame a daemon accepts; a peer sending a larger one is disconnected."},
		{Name: "egret.tmanager.establish.timeout", Type: spi.KeyDuration, Default: "60s", Check: spi.CheckPositive,
			Doc: "How long a starting tmanager retries while another session holds the tmanager location."},
		{Name: "egret.executor.restart.reset.after", Type: spi.KeyDuration, Default: "60s", Check: spi.CheckPositive,
			Doc: "A process that stays up this long has its restart backoff reset."},
		{Name: "egret.executor.stop.grace", Type: spi.KeyDuration, Default: "10s", Check: spi.CheckPositive,
			Doc: "How long the executor waits after SIGTERM before it kills a child with SIGKILL."},
		{Name: "egret.instance.gomaxprocs", Type: spi.KeyInt, Default: "0", Check: spi.CheckNonNegative,
			Doc: "GOMAXPROCS of instance processes; 0: the instance's cpu in the packing plan, rounded up, at least 1 (set by the executor, docs/isolation.md). The GOMAXPROCS environment variable wins. 1 saves the Go scheduler's cross-thread wake-ups (docs/benchmarks.md) at the cost of peak throughput per instance."},
		{Name: "egret.instance.heap.floor", Type: spi.KeyBytes, Default: "16MiB", Check: spi.CheckPositive,
			Doc: "Heap growth an instance allows between two garbage collections while its live heap is smaller (a process per container: this times its instances). Instances allocate for every tuple they receive and keep little live: a larger floor makes collections rarer (less CPU: docs/benchmarks.md, issue 18's second round) for up to this much more memory per instance (docs/backpressure.md). Setting GOGC turns the floor off."},
		{Name: "egret.executor.cgroups", Type: spi.KeyEnum, Enum: []string{"auto", "off"}, Default: "auto",
			Doc: "auto: where the executor may create cgroups (v2 with cpu and memory delegated, or v1), every process of the container gets its own, with the cpu and memory of its share of the packing plan; otherwise, and with off, only GOMAXPROCS, GOMEMLIMIT and the executor's RSS watchdog apply (docs/isolation.md)."},
		{Name: "egret.executor.monitor.interval", Type: spi.KeyDuration, Default: "2s", Check: spi.CheckPositive,
			Doc: "How often the executor reads the resource use of its processes (cgroup counters and RSS each interval, the disk of each instance's working directory every fifth), kills an instance over its memory without cgroups, and publishes resource.* metrics."},
		{Name: "egret.instance.queue.max.bytes", Type: spi.KeyBytes, Default: "1MiB", Check: spi.CheckPositive,
			Doc: "Bound of an instance's inbound and outbound queues, each (at most 1GiB). Both are outside the stream manager's watermarks: under back pressure they stay full, so they add to the instance's memory and to the tuples in flight (docs/backpressure.md)."},
		{Name: "egret.tmanager.heartbeat.timeout", Type: spi.KeyDuration, Default: "5s", Check: spi.CheckPositive,
			Doc: "A stream manager silent this long is evicted by the tmanager; above the heartbeat interval."},
		{Name: "egret.executor.restart.backoff.initial", Type: spi.KeyDuration, Default: "1s", Check: spi.CheckPositive,
			Doc: "First delay before the executor restarts a dead process; doubles on each restart."},
		{Name: "egret.executor.restart.backoff.max", Type: spi.KeyDuration, Default: "1m", Check: spi.CheckPositive,
			Doc: "Largest restart delay."},
		{Name: "egret.metrics.export.interval", Type: spi.KeyDuration, Default: "10s", Check: spi.CheckPositive,
			Doc: "Interval at which processes send their metrics to the metrics manager."},
		{Name: "egret.logging.max.size", Type: spi.KeyBytes, Default: "100MiB", Check: spi.CheckPositive,
			Doc: "Size at which the executor rotates the log of each process it runs (logs/<process>.log becomes <process>.log.1, older ones shift up). A file exceeds it only by a single write larger than it (a process's output reaches the file in pieces of at most 32KiB)."},
		{Name: "egret.logging.max.files", Type: spi.KeyInt, Default: "5", Check: spi.CheckPositive,
			Doc: "Rotated files kept per log besides the current one (<process>.log.1 ... .N); the oldest is deleted."},
	}},
	{"metrics_sinks", []spi.Key{
		{Name: "egret.metrics.sinks", Type: spi.KeyList, Default: "file,tmanager", Check: checkSinks,
			Doc: "Metrics sinks each metrics manager feeds: file (JSON lines in the container's metrics.jsonl, rotated by egret.metrics.file.max.size and .max.files), tmanager (forwarded to the topology manager, for egret metrics and the tracker), prometheus (a scrape endpoint per container, GET /metrics), graphite (plaintext lines to a carbon receiver), or the name of an external sink plugin egret-metricssink-<name> in egret.plugin.directory; empty: none."},
	}},
}

// removedKeys were once documented but nothing read them; a config that
// still sets one is told so instead of having it pass as a plugin's key.
// name also covers the keys below it.
var removedKeys = []struct{ name, why string }{
	{"egret.scheduler.is.service", "the scheduler decides whether it runs as a service (local) or inside the CLI (nomad)"},
	{"egret.statemgr.initialize.tree", "the state managers always create their tree"},
	{"egret.statemgr.retry", "the zookeeper state manager retries a repeatable operation after a connection loss until the command's deadline, with its own backoff"},
	{"egret.logging.directory", "logs are always in the logs/ directory of a container's working directory"},
	{"egret.metrics.sink", "the file sink always writes metrics.jsonl in the container's working directory and the tmanager sink forwards every report at once"},
}

// crossChecks relate two keys; each returns a message or "".
var crossChecks = []struct {
	a, b string // the problem is reported on a, a must be < (or <=) b
	le   bool
}{
	{a: "egret.stmgr.buffer.low.watermark.bytes", b: "egret.stmgr.buffer.high.watermark.bytes"},
	{a: "egret.stmgr.batch.max.bytes", b: "egret.stmgr.buffer.low.watermark.bytes", le: true},
	{a: "egret.executor.restart.backoff.initial", b: "egret.executor.restart.backoff.max", le: true},
	{a: "egret.stmgr.heartbeat.interval", b: "egret.tmanager.heartbeat.timeout"},
}

// schemaTable is the schema of one load: the core keys, the keys of every
// built-in backend and those the selected external plugins declare.
type schemaTable struct {
	keys     []Key
	index    map[string]int
	builtins map[string][]string // kind -> built-in names
}

// buildSchema assembles the schema from coreKeys, the backends registered
// with core/spi and plugins (kind/name -> the keys that external plugin
// declares). A key declared twice is reported in the returned problems
// (for a built-in backend, a programming error TestSchema catches).
func buildSchema(plugins map[string][]spi.Key) (*schemaTable, []string) {
	t := &schemaTable{index: map[string]int{}, builtins: map[string][]string{}}
	var problems []string
	add := func(k Key) {
		if i, dup := t.index[k.Name]; dup {
			problems = append(problems, fmt.Sprintf("key %s of %s is already a key of %s", k.Name, owner(k), owner(t.keys[i])))
			return
		}
		t.index[k.Name] = len(t.keys)
		t.keys = append(t.keys, k)
	}
	for _, kind := range spi.Kinds {
		t.builtins[kind] = spi.BackendNames(kind)
	}
	selecting := map[string]string{keySinks: spi.KindMetricsSink}
	for _, b := range backendKeys {
		selecting[b.key] = b.kind
	}
	for _, fk := range coreKeys {
		for _, k := range fk.keys {
			k.Enum = slices.Clone(k.Enum)
			if kind, ok := selecting[k.Name]; ok {
				k.Doc = strings.ReplaceAll(k.Doc, builtinsMark, strings.Join(t.builtins[kind], ", "))
			}
			add(Key{Key: k, File: fk.file})
		}
	}
	for _, kind := range spi.Kinds {
		for _, name := range t.builtins[kind] {
			keys, _ := spi.BackendKeys(kind, name)
			for _, k := range keys {
				add(Key{Key: k, File: kindFiles[kind], Backend: kind + "/" + name})
			}
		}
	}
	owners := make([]string, 0, len(plugins))
	for o := range plugins {
		owners = append(owners, o)
	}
	sort.Strings(owners)
	for _, o := range owners {
		kind, _, _ := strings.Cut(o, "/")
		for _, k := range plugins[o] {
			if err := k.Validate(); err != nil {
				problems = append(problems, fmt.Sprintf("plugin %s declares a bad key: %v", o, err))
				continue
			}
			add(Key{Key: k, File: kindFiles[kind], Backend: o})
		}
	}
	return t, problems
}

func owner(k Key) string {
	if k.Backend == "" {
		return "the core"
	}
	kind, name, _ := strings.Cut(k.Backend, "/")
	return "the " + name + " " + spi.KindNoun(kind)
}

func (t *schemaTable) lookup(name string) (*Key, bool) {
	i, ok := t.index[name]
	if !ok {
		return nil, false
	}
	return &t.keys[i], true
}

func (t *schemaTable) names() []string {
	out := make([]string, len(t.keys))
	for i, k := range t.keys {
		out[i] = k.Name
	}
	return out
}

func (t *schemaTable) hasPrefix(p string) bool {
	for _, k := range t.keys {
		if k.Name == p || strings.HasPrefix(k.Name, p+".") {
			return true
		}
	}
	return false
}

// builtinSchema is the schema without external plugins.
func builtinSchema() *schemaTable {
	t, problems := buildSchema(nil)
	if len(problems) > 0 {
		panic("conf: " + strings.Join(problems, "; "))
	}
	return t
}

// Schema returns a copy of the schema: the core keys and the keys of the
// built-in backends, core keys first.
func Schema() []Key {
	return builtinSchema().keys
}

// LookupKey returns the schema entry of name.
func LookupKey(name string) (Key, bool) {
	k, ok := builtinSchema().lookup(strings.ToLower(name))
	if !ok {
		return Key{}, false
	}
	return *k, true
}
