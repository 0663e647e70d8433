// Package multilang speaks Storm's multilang protocol with a subprocess,
// so that spouts and bolts written in any language (Python components
// built on pystorm or streamparse, Ruby, Node.js, ...) run in an Egret
// topology unchanged. api.ShellSpout and api.ShellBolt are built on it.
//
// A message is JSON text followed by a line "end". Parse reads the JSON
// with the value mapping of docs/multilang.md (integers exact to 64 bits,
// Python's NaN and Infinity accepted); AppendValue writes it. Reader
// frames a subprocess's stdout into messages and Decode checks each.
//
// Start runs a subprocess in a directory, performs the handshake (pid
// directory, conf, context), and returns a Process: a reader goroutine
// queues the decoded messages on In, a writer goroutine writes what is
// queued on Out, each queue bounded (Config.QueueSize), so a subprocess
// that falls behind stops the component's runtime and the runtime's back
// pressure stops a subprocess that emits faster than the topology takes.
// The subprocess's stderr goes to the log line by line. A watchdog sends
// Storm's heartbeat tuples to bolts and kills a subprocess that stays
// silent for the heartbeat timeout while an answer is awaited; a message
// that breaks the protocol also kills it, and Done and Err tell its owner,
// which restarts it.
package multilang
