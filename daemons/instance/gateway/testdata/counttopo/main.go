// Command counttopo is a topology binary for the instance-mode tests: spout
// "nums" emits 0, 1, 2, ... up to $COUNT_LIMIT (default 0: nothing), bolt
// "sink" (parallelism 2, shuffle) consumes them.
package main

import (
	"os"
	"strconv"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
)

type nums struct {
	limit, next int64
	out         api.SpoutCollector
}

func (s *nums) Open(_ api.Context, out api.SpoutCollector) error {
	s.out = out
	s.limit, _ = strconv.ParseInt(os.Getenv("COUNT_LIMIT"), 10, 64)
	return nil
}

func (s *nums) NextTuple() {
	for i := 0; i < 64 && s.next < s.limit; i++ {
		s.out.Emit(api.Values{s.next}, nil)
		s.next++
	}
}

func (s *nums) Ack(any)                                  {}
func (s *nums) Fail(any)                                 {}
func (s *nums) Activate()                                {}
func (s *nums) Deactivate()                              {}
func (s *nums) Close()                                   {}
func (s *nums) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("n") }

type sink struct{}

func (sink) Prepare(api.Context, api.BoltCollector) error { return nil }
func (sink) Execute(api.Tuple)                            {}
func (sink) Cleanup()                                     {}
func (sink) DeclareOutputFields(api.OutputDeclarer)       {}

func main() {
	b := api.NewTopologyBuilder("count")
	b.SetSpout("nums", func() api.Spout { return &nums{} }, 1)
	b.SetBolt("sink", func() api.Bolt { return sink{} }, 2).ShuffleGrouping("nums")
	runner.Main(b)
}
