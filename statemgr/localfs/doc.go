// Package localfs is the spi.StateManager backend on a local directory, for
// one host (cluster "local"), registered as "localfs".
//
// Config: egret.statemgr.root.path (directory, required),
// egret.statemgr.session.timeout (default 10s) and
// egret.statemgr.localfs.poll.interval (default 200ms).
//
// Each node is a directory below <root>/tree holding an @node file (a JSON
// header with version, identity, ephemeral owner, and the size and CRC-32
// of the data, then the data); children are subdirectories. A node file
// that is damaged (no or a garbage header, data of another size or
// checksum) is reported as spi.ErrCorrupt naming the file; it is still
// listed by Children, and an unconditional delete removes it. Any number of sessions, in any number of
// processes on the host, may share a root: every operation holds an
// exclusive flock(2) on <root>/lock.
//
// Guarantees:
//
//   - Atomicity. Every write, and every Multi as a whole, is a transaction:
//     each mutation is preceded by an undo record in <root>/txn (old node
//     files and deleted subtrees are moved there, not copied), and commit
//     is an atomic rename of that directory. A transaction that fails is
//     rolled back at once; one interrupted by a crash (kill -9) is rolled
//     back by the next process that takes the lock, before it reads
//     anything. No reader ever sees half a transaction. Files are not
//     fsynced: the guarantee holds against process crashes, not against a
//     power loss or kernel crash.
//   - Ephemeral nodes. A session owns a lease file <root>/sessions/<id>
//     (pid, hostname, process start time, timeout) whose mtime a heartbeat
//     refreshes every SessionTimeout/3. Any reader treats an ephemeral node
//     whose owner's lease is older than SessionTimeout, or whose process no
//     longer runs on this host, as absent: it deletes the lease (the
//     death is final) and the node. Close deletes the lease and the
//     session's ephemeral nodes and locks.
//   - Watches poll the node every poll interval (and right after this
//     session's own writes) and report the difference.
//   - Locks are ephemeral nodes at the lock path; waiters poll.
//
// If a session's lease is declared dead while its process lives (a pause
// longer than the timeout), the session continues as a new session and its
// watches report spi.EventSessionLost. Use the backend only on a local
// filesystem: flock and rename semantics on network filesystems vary.
package localfs
