// Command kafkawordcount counts the words of the sentences in a Kafka
// topic and writes "word count" records to another topic, effectively
// once by default (see docs/kafka.md):
//
//	egret submit local ./examples/kafkawordcount -- --brokers 127.0.0.1:9092
//
// Its own flags (given before Egret's, or after -- with egret submit):
//
//	--brokers LIST   Kafka bootstrap brokers, host:port,... (required)
//	--input TOPIC    topic of the sentences (default sentences)
//	--output TOPIC   topic of the counts (default counts)
//	--group NAME     consumer group outside effectively-once mode
//	--mode MODE      at-most-once, at-least-once or effectively-once (default)
//	--splits N       split bolt parallelism (default 2)
//	--counts N       count bolt parallelism (default 2)
//	--containers N   containers in a cluster (default 1)
//	--checkpoint-interval D  topology.stateful.checkpoint.interval (default 5s)
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/examples/kafkawordcount/kafkawordcount"
)

func main() {
	var o kafkawordcount.Options
	var mode string
	fs := flag.NewFlagSet("kafkawordcount", flag.ContinueOnError)
	fs.StringVar(&o.Brokers, "brokers", "", "Kafka bootstrap brokers (host:port,...)")
	fs.StringVar(&o.Input, "input", "sentences", "topic of the sentences")
	fs.StringVar(&o.Output, "output", "counts", "topic of the counts")
	fs.StringVar(&o.Group, "group", "kafkawordcount", "consumer group outside effectively-once mode")
	fs.StringVar(&mode, "mode", string(topology.EffectivelyOnce), "delivery mode")
	fs.IntVar(&o.Splits, "splits", 2, "split bolt parallelism")
	fs.IntVar(&o.Counts, "counts", 2, "count bolt parallelism")
	fs.IntVar(&o.Containers, "containers", 1, "containers in a cluster")
	fs.DurationVar(&o.CheckpointInterval, "checkpoint-interval", 0, "checkpoint interval (effectively-once; 0: the default)")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	o.Mode = topology.DeliveryMode(mode)
	os.Exit(runner.MainArgs(kafkawordcount.Builder(o), rest, os.Stdout, os.Stderr))
}
