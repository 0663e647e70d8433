// Command wordcount is Egret's classic example: a spout emits random
// sentences, a split bolt cuts them into words, and a count bolt keeps a
// running count per word, grouped by word so each word is counted by one
// task. Every second the count bolts send their changed counts to a single
// report bolt, which prints the top words when the topology stops.
//
//	go run ./examples/wordcount --local --duration 10s
package main

import (
	"github.com/egret-stream/egret"
	"github.com/egret-stream/egret/examples/wordcount/wordcount"
)

func main() {
	egret.Run(wordcount.Builder(wordcount.Options{}))
}
