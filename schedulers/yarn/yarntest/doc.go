// Package yarntest runs a real one-node Hadoop cluster for tests: the
// registry's ZooKeeper, an HDFS NameNode and DataNode (MiniDFSCluster) and
// a YARN ResourceManager and NodeManager (MiniYARNCluster) with the YARN
// Services REST API, from Hadoop 3.4.2's artifacts on Maven Central.
//
// The launcher is our own small Java program (minicluster/, with its
// pom.xml), embedded in this package. Start resolves its dependencies
// with Maven (`mvn dependency:build-classpath`, cached in ~/.m2; the first
// run downloads about 105 MB), compiles it with javac into the user cache
// directory (once per launcher version), writes core-site.xml,
// yarn-site.xml, hdfs-site.xml, capacity-scheduler.xml and
// log4j.properties with free loopback ports into the cluster's directory
// (first on the class path: the Services API and its application masters
// read their configuration from there), runs it, and waits until the
// Services API and the NameNode answer.
//
// The cluster has two queues, default and streaming (50% each, up to
// 100%), uses the DominantResourceCalculator (vcores count), and one
// NodeManager offering NodeMemoryMB and NodeVcores, with a largest
// container of MaxAllocationMB and MaxAllocationVcores. Memory checks are
// off: the containers' processes are Go programs with large virtual sizes.
//
// Stop closes the launcher's standard input (it stops YARN, which kills
// the containers, then HDFS and ZooKeeper), waits for it, and kills any
// process still running in the cluster's directory (application masters
// or containers of a launcher that did not stop cleanly).
//
// Requirements: java (17) and mvn on PATH, and Maven Central reachable on
// the first run. Without them Start fails; tests call Skip or fail
// according to EGRET_REQUIRE_HADOOP.
package yarntest
