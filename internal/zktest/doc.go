// Package zktest runs a real standalone ZooKeeper server (from Debian's
// zookeeper package) for tests, on a free port, and kills it when the test
// ends.
//
// The server is started as
//
//	java -cp /usr/share/java/zookeeper.jar org.apache.zookeeper.server.ZooKeeperServerMain <port> <dataDir> <tickMs>
//
// (the jar's manifest Class-Path pulls in its dependencies from
// /usr/share/java). Set EGRET_ZOOKEEPER_CLASSPATH to use another ZooKeeper
// and EGRET_REQUIRE_ZK=1 to fail instead of skip when none is installed.
package zktest
