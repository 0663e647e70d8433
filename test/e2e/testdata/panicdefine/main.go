// Command panicdefine is a topology binary whose main panics before it
// calls runner.Main, for the end-to-end test that submit reports the panic
// in one line instead of a stack trace.
package main

import (
	"os"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/examples/wordcount/wordcount"
)

// brokers stands for configuration a topology's main reads before it
// builds the topology.
func brokers() []string {
	if b := os.Getenv("PANICDEFINE_BROKERS"); b != "" {
		return []string{b}
	}
	panic("no brokers configured")
}

func main() {
	_ = brokers()
	runner.Main(wordcount.Builder(wordcount.Options{}))
}
