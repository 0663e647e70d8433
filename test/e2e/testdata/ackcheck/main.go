// Command ackcheck is the at-least-once verification topology (see package
// ackcheck): a replayable spout of N numbered messages, a fan-out bolt, a
// relay bolt and a sink that records every tuple, with at-least-once
// delivery.
//
//	go run ./test/e2e/testdata/ackcheck --messages 20000 --state /tmp/ack --local --duration 20s
//	egret submit local ./ackcheck -- --messages 20000 --state /tmp/ack
//
// Its own flags (given before Egret's, or after -- with egret submit):
//
//	--name NAME          topology name (default ackcheck)
//	--messages N         message ids 0..N-1 (0: unbounded)
//	--state DIR          the spouts' logs and the sinks' records (required)
//	--rate N             emits per second over all spout tasks (0: unlimited)
//	--max-pending N      max.spout.pending per spout task (default 1000)
//	--timeout D          message timeout (default 10s)
//	--containers N       containers in a cluster (default 2)
//	--copies N           tuples the fanout bolt emits per message (default 3)
//	--spouts N, --bolts N  parallelisms (default 2)
//	--no-sink-log        the sink acks without recording (benchmarks)
//	--shell-source CMD   run the source as a multilang subprocess ("python3 source.py")
//	--shell-relay CMD    run the relay as a multilang subprocess ("python3 relay.py")
//	--set KEY=VALUE      a topology setting (repeatable)
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/egret-stream/egret"
	"github.com/egret-stream/egret/test/e2e/testdata/ackcheck/ackcheck"
)

func main() {
	var o ackcheck.Options
	fs := flag.NewFlagSet("ackcheck", flag.ContinueOnError)
	fs.StringVar(&o.Name, "name", "ackcheck", "topology name")
	fs.Int64Var(&o.Messages, "messages", 20000, "message ids 0..N-1 (0: unbounded)")
	fs.StringVar(&o.StateDir, "state", "", "directory of the spouts' logs and the sinks' records (required)")
	fs.IntVar(&o.Rate, "rate", 0, "emits per second over all spout tasks (0: unlimited)")
	fs.IntVar(&o.MaxSpoutPending, "max-pending", 1000, "max.spout.pending per spout task")
	fs.DurationVar(&o.MessageTimeout, "timeout", 0, "message timeout (default 10s)")
	fs.IntVar(&o.Containers, "containers", 2, "containers in a cluster")
	fs.IntVar(&o.Copies, "copies", 3, "tuples the fanout bolt emits per message")
	fs.IntVar(&o.Spouts, "spouts", 2, "spout parallelism")
	fs.IntVar(&o.Bolts, "bolts", 2, "parallelism of each bolt")
	fs.BoolVar(&o.NoSinkLog, "no-sink-log", false, "the sink acks without recording")
	fs.Func("shell-source", "run the source as a multilang subprocess: command and arguments separated by spaces", func(v string) error {
		o.ShellSource = strings.Fields(v)
		return nil
	})
	fs.Func("shell-relay", "run the relay as a multilang subprocess: command and arguments separated by spaces", func(v string) error {
		o.ShellRelay = strings.Fields(v)
		return nil
	})
	o.Settings = map[string]string{}
	fs.Func("set", "a topology setting KEY=VALUE (repeatable)", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, got %q", v)
		}
		o.Settings[k] = val
		return nil
	})
	own, rest := egret.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(egret.ExitUsage)
	}
	if o.StateDir == "" && !instanceMode(rest) {
		fmt.Fprintln(os.Stderr, "ackcheck: --state DIR is required")
		os.Exit(egret.ExitUsage)
	}
	b, err := ackcheck.Builder(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ackcheck: %v\n", err)
		os.Exit(egret.ExitUsage)
	}
	os.Exit(egret.RunArgs(b, rest, os.Stdout, os.Stderr))
}

// instanceMode reports whether the executor runs this binary as an
// instance, which reads the options from the submitted definition.
func instanceMode(args []string) bool {
	for _, a := range args {
		if a == "--instance" || a == "-instance" || strings.HasPrefix(a, "--instance=") {
			return true
		}
	}
	return false
}
