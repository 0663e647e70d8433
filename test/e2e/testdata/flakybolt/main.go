// Command flakybolt is the tracker and UI test topology: a spout
// "numbers" emits increasing integers at a bounded rate, a bolt "flaky"
// (shuffle grouping) passes them on and reports an error through
// ReportError for every 100th, and a bolt "sink" (fields grouping on "n")
// counts what it gets.
//
//	egret submit local ./test/e2e/testdata/flakybolt -- --rate 200
//
// Its own flags (given before Egret's, or after -- with egret submit):
//
//	--rate N        numbers per second per spout task (default 200)
//	--containers N  containers in a cluster (default 2)
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
)

// keyRate is the topology config key of the spout's rate.
const keyRate = "flakybolt.rate"

// errorEvery is how often (in tuples) the flaky bolt reports an error.
const errorEvery = 100

func main() {
	var rate, containers int
	fs := flag.NewFlagSet("flakybolt", flag.ContinueOnError)
	fs.IntVar(&rate, "rate", 200, "numbers per second per spout task")
	fs.IntVar(&containers, "containers", 2, "containers in a cluster")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	if rate < 1 || containers < 1 {
		fmt.Fprintln(os.Stderr, "flakybolt: --rate and --containers must be positive")
		os.Exit(runner.ExitUsage)
	}
	b := api.NewTopologyBuilder("flakybolt")
	b.SetContainers(containers)
	b.SetConfig(keyRate, strconv.Itoa(rate))
	b.SetSpout("numbers", func() api.Spout { return &numbers{} }, 1)
	b.SetBolt("flaky", func() api.Bolt { return &flaky{} }, 2).ShuffleGrouping("numbers")
	b.SetBolt("sink", func() api.Bolt { return &sink{} }, 1).FieldsGrouping("flaky", "n")
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}

type numbers struct {
	api.BaseSpout
	out  api.SpoutCollector
	gap  time.Duration
	next int64
	due  time.Time
}

func (s *numbers) Open(ctx api.Context, out api.SpoutCollector) error {
	rate, err := strconv.Atoi(ctx.Config(keyRate))
	if err != nil || rate < 1 {
		return fmt.Errorf("config %s: %q is not a positive number", keyRate, ctx.Config(keyRate))
	}
	s.out, s.gap, s.due = out, time.Second/time.Duration(rate), time.Now()
	return nil
}

func (s *numbers) NextTuple() {
	if time.Now().Before(s.due) {
		return // the runtime backs off
	}
	s.due = s.due.Add(s.gap)
	if lag := time.Since(s.due); lag > time.Second {
		s.due = time.Now() // do not burst after a pause
	}
	s.out.Emit(api.Values{s.next}, nil)
	s.next++
}

func (s *numbers) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("n") }

type flaky struct {
	api.BaseBolt
	out  api.BoltCollector
	seen int64
}

func (b *flaky) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out = out
	return nil
}

func (b *flaky) Execute(t api.Tuple) {
	b.seen++
	if b.seen%errorEvery == 0 {
		b.out.ReportError(errors.New("flaky bolt rejects every 100th number"))
	}
	b.out.Emit(api.Values{t.Int64(0)}, t)
	b.out.Ack(t)
}

func (b *flaky) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("n") }

type sink struct {
	api.BaseBolt
	out   api.BoltCollector
	count int64
}

func (b *sink) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out = out
	return nil
}

func (b *sink) Execute(t api.Tuple) {
	b.count++
	b.out.Ack(t)
}

func (b *sink) DeclareOutputFields(api.OutputDeclarer) {}
