package metricsmgr

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// helps say what the headline metrics mean and their unit (as exported:
// nanoseconds become seconds). Others get a help derived from their name.
var helps = map[string]string{
	"instance.emitted":                     "Tuples the task emitted (each emit once, whatever the number of destinations).",
	"instance.sent":                        "Tuple copies the task sent toward their destination tasks.",
	"instance.executed":                    "Tuples the bolt task executed (tick tuples included).",
	"instance.acked":                       "Roots of the spout task acked: fully processed (at-least-once).",
	"instance.failed":                      "Roots of the spout task failed (at-least-once): replayed by a reliable spout.",
	"instance.timed.out":                   "Roots of the spout task that timed out (topology.message.timeout) and were failed.",
	"instance.errors":                      "Errors the task reported (panics, ReportError).",
	"instance.dropped":                     "Tuples the task dropped (received by a task that could not process them).",
	"instance.pending.roots":               "Roots the spout task emitted that are neither acked nor failed yet (a level).",
	"instance.held.tuples":                 "Tuples the bolt task holds outside Execute, neither acked nor failed yet: those a shell bolt's subprocess has not finished (a level).",
	"instance.next.tuples":                 "NextTuple calls of the spout task.",
	"gateway.in.queue.bytes":               "Bytes queued toward the task's user code (a level).",
	"gateway.out.queue.bytes":              "Bytes the task emitted that wait to be sent to its stream manager (a level).",
	"stmgr.queue.bytes":                    "Bytes the stream manager holds toward its instances and peers (a level).",
	"stmgr.instance.queue.bytes":           "Bytes the stream manager holds toward one local instance (to_task) (a level).",
	"stmgr.instance.tuples.out":            "Tuples the stream manager sent to one local instance (to_task).",
	"stmgr.instance.bytes.out":             "Bytes the stream manager sent to one local instance (to_task).",
	"stmgr.instance.tuples.lost":           "Tuples toward one local instance (to_task) lost (its connection closed with them queued).",
	"stmgr.peer.queue.bytes":               "Bytes the stream manager holds toward one peer stream manager (to_container) (a level).",
	"stmgr.peer.tuples.out":                "Tuples the stream manager sent to one peer stream manager (to_container).",
	"stmgr.peer.bytes.out":                 "Bytes the stream manager sent to one peer stream manager (to_container).",
	"stmgr.peer.tuples.lost":               "Tuples toward one peer stream manager (to_container) lost (its connection closed with them queued).",
	"stmgr.tuples.lost":                    "Tuples the stream manager lost (a connection closed with them queued).",
	"stmgr.backpressure.active":            "1 while the stream manager is in back pressure (its local spouts throttled), else 0.",
	"stmgr.backpressure.time.throttled.ns": "Seconds the stream manager's local spouts were throttled by back pressure, for any cause.",
	"stmgr.instances.connected":            "Local instances connected to the stream manager (a level).",
	"stmgr.peers.connected":                "Peer stream managers connected to the stream manager (a level).",
	"stmgr.ack.roots.pending":              "Roots the stream manager's acking ledger tracks (a level).",
	"process.cpu.seconds":                  "CPU time (user and system) the process used, in seconds.",
	"process.rss.bytes":                    "Resident memory of the process, in bytes.",
	"process.goroutines":                   "Goroutines of the process.",
	"process.open.fds":                     "Open file descriptors of the process.",
	"process.gc.cycles":                    "Garbage collections the process ran.",
	"process.gc.pause.ns":                  "Seconds the process was paused by garbage collection.",
	"process.pid":                          "Process id (changes when the process restarts).",
	"process.start.unix":                   "Start time of the process, Unix seconds.",
	"resource.memory.oom.kills":            "Times the instance was killed for exceeding its memory limit (cgroup OOM kill).",
	"resource.cpu.throttled.seconds":       "Seconds the instance was throttled at its CPU limit.",
	"resource.memory.bytes":                "Memory the instance's cgroup uses, in bytes.",
	"resource.memory.limit.bytes":          "Memory limit of the instance, in bytes.",
	"resource.cpu.limit.cores":             "CPU limit of the instance, in cores.",
}

// promHelp says what a metric means and its unit.
func promHelp(metric string, typ prometheus.ValueType) string {
	if h, ok := helps[metric]; ok {
		return h + " Egret metric " + metric + "."
	}
	unit := "units counted"
	switch {
	case strings.HasSuffix(metric, ".bytes"):
		unit = "bytes"
	case strings.HasSuffix(metric, ".ns"), strings.HasSuffix(metric, ".nanos"), strings.HasSuffix(metric, ".seconds"):
		unit = "seconds"
	}
	kind := "Running total since the process started"
	if typ == prometheus.GaugeValue {
		kind = "Current level"
	}
	if name, ok := strings.CutPrefix(metric, "user."); ok {
		return "Running total of the component's user counter " + name + " (api.Counter) since the task started."
	}
	return kind + ", in " + unit + ", of the Egret metric " + metric + "."
}
