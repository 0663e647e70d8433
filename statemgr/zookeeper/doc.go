// Package zookeeper is the spi.StateManager backend on Apache ZooKeeper
// (github.com/go-zookeeper/zk), registered as "zookeeper".
//
// Config: egret.statemgr.connection.string (host:port[,...], required),
// egret.statemgr.root.path (default /egret), egret.statemgr.session.timeout
// (default 10s) and egret.statemgr.connection.timeout (default 15s; how long
// New waits for the first session before failing with an error naming the
// servers).
//
// Egret's "/" is the root path; missing parents are created as persistent
// nodes; ephemeral nodes are ZooKeeper ephemerals (they vanish when the
// session closes or expires). Create, Delete and Multi that need parents
// created or a subtree deleted run as one ZooKeeper multi, planned from a
// read of the tree and planned again if the tree changed meanwhile, so they
// are atomic. Watches re-arm ZooKeeper's one-shot watches after every event
// and report the difference between reads. Locks follow ZooKeeper's lock
// recipe (ephemeral sequential children of the lock path). A session
// expiry is reported to every watch as spi.EventSessionLost; the client then
// continues with a new session, and ephemeral nodes must be created again.
//
// A call whose context ends returns at once, but a write already sent may
// still be applied by the server (as with any ZooKeeper connection loss).
package zookeeper
