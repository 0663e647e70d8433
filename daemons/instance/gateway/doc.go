// Package gateway connects an instance process to its container's stream
// manager: it is the socket implementation of instance.Transport and the
// body of a topology binary's instance mode (api/runner's Main with --instance).
//
// Run dials the stream manager's Unix socket (retrying with backoff),
// registers the task (RegisterInstanceRequest), waits for the physical
// plan, builds the instance from it — the plan's logical topology and
// packing plan, the binary's spout and bolt factories looked up by
// component name — and runs daemons/instance.Instance.
//
// Outbound, the instance's batches go to one queue bounded by
// egret.instance.queue.max.bytes; a writer goroutine writes them as data
// frames into a 64 KiB buffer and flushes whenever the queue is empty, so
// Idle (the queue is empty) tells the instance to flush its own batches
// eagerly when the path is free. Inbound, a reader goroutine turns data
// frames into batches on the instance's inbox, bounded by the same number
// of bytes: when the instance falls behind, the reader stops and the
// stream manager's queue fills (back pressure).
//
// Each new plan is compared with the running one: a changed topology state
// activates or deactivates a spout (MsgActivate, MsgDeactivate); a changed
// task layout that keeps this task's component and container (a rescale)
// is handed to the instance (MsgLayout, instance.PrepareRelayout), which
// follows it without a restart; any other layout change (the task moved,
// or an effectively-once topology) makes Run return ErrLayoutChanged, and
// the binary exits with code 3 so the executor restarts it with the new
// plan. When the stream
// manager connection drops, the gateway reconnects and registers again
// while the component keeps running: batches are held up to the queue's
// bound and the rest dropped and counted (Stats.TuplesLost).
//
// In a container process (topology.container.mode process-per-container)
// the connection is in memory and, once registered, carries no frames:
// the gateway and the stream manager hand them to each other by direct
// calls (direct.go). Send then routes the batch in the instance's
// goroutine, the stream manager's writer of the task puts inbound batches
// on the inbox, and Idle reports whether the destination's queue in the
// stream manager is empty.
//
// Instance counters, user counters and the process's cpu and memory are
// published as MetricsPublish frames to the metrics manager's socket every
// egret.metrics.export.interval; an absent metrics manager is tolerated.
package gateway
