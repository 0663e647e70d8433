// Package hadoop holds the tests that need a real Hadoop cluster: the
// hdfs uploader, the hdfs checkpoint storage and the yarn scheduler against a NameNode, a
// ResourceManager and a NodeManager (schedulers/yarn/yarntest), in process
// and over the plugin boundary, and `egret submit yarn` end to end. The
// package starts the cluster once, in TestMain, and stops it (and every
// process it ran) at the end.
//
// `go test -short` skips them. Without java, javac or mvn they are
// skipped too, unless EGRET_REQUIRE_HADOOP=1 (then they fail).
package hadoop
