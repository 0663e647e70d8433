// Package stmgr is the stream manager: one per container 1..N, the hub of
// the container's data plane.
//
// Local instances connect to its Unix socket and register
// (RegisterInstanceRequest); peer stream managers connect to its TCP port
// and say hello (StMgrHello, checked against the topology id). It finds the
// topology manager through the state manager (/tmanagers/<name>, watched),
// registers with its location, heartbeats every
// egret.stmgr.heartbeat.interval and registers again after any topology
// manager restart or move. Every physical plan it receives is forwarded to
// its local instances and rewires the full mesh: one outgoing connection to
// every peer, which carries only this stream manager's frames (a stream
// manager sends on connections it dialled and receives on connections it
// accepted).
//
// Data frames are routed by their destination task id, read from the frame
// header; tuple records are never decoded. A local task's frames go to
// that instance's connection (one hop), a remote task's to the peer of the
// task's container (two hops). Every destination has one queue bounded by
// egret.stmgr.buffer.max.bytes and one writer goroutine that batches frames
// in a buffer of egret.stmgr.batch.max.bytes and flushes whenever its queue
// is empty: at once when idle, in full buffers under load. While a
// destination is connected a full queue blocks the reader of the source
// connection, so socket flow control pushes back to the sender; while it
// is not (an instance not yet registered, a peer reconnecting) the queue
// holds frames up to its bound and drops the rest, counting the lost
// tuples.
//
// Back pressure (backpressure.go): when a queue toward a connected or
// starting destination passes the high watermark, the stream manager stops
// reading its local spouts (or, in drop mode, drops their tuples) and
// announces it to every peer, until every queue is below the low
// watermark.
//
// At-least-once (ack.go): the stream manager holds the XOR ledger of each
// local spout task, applies acking updates of its roots, forwards the
// others to the stream manager of the root's container, and sends
// completed and failed roots back to the spout instance.
//
// In container mode (topology.container.mode process-per-container) the
// instances of its process register over in-memory connections and then
// hand their frames to it by direct calls, and it hands them theirs
// (direct.go): the same frames and rules without a socket in between.
//
// Garbage, an oversized frame (egret.wire.max.frame.bytes), an unknown
// frame type or a failed handshake closes that one connection with a
// logged error. docs/protocol.md ("Stream manager and instances")
// describes the connections, handshakes and rules in detail.
package stmgr
