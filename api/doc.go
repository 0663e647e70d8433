// Package api is what a topology author imports: the Spout and Bolt
// interfaces with their collectors, tuples, the TopologyBuilder with every
// grouping, and typed topology and component configuration.
//
// A topology is a Go program. Its main builds the topology and hands it to
// runner.Main (package api/runner), which, depending on how the binary is started, writes the
// topology definition (for egret submit), runs the whole topology in one
// process (--local), or runs one instance inside a container:
//
//	func main() {
//		b := api.NewTopologyBuilder("wordcount")
//		b.SetSpout("sentences", func() api.Spout { return &SentenceSpout{} }, 1)
//		b.SetBolt("split", func() api.Bolt { return &SplitBolt{} }, 2).
//			ShuffleGrouping("sentences")
//		b.SetBolt("count", func() api.Bolt { return &CountBolt{} }, 2).
//			FieldsGrouping("split", "word")
//		runner.Main(b)
//	}
//
// Every instance runs in its own process in a cluster, so components are
// created by factory functions in each process rather than serialized.
// BaseSpout and BaseBolt give no-op defaults for the optional methods.
package api
