package ackcheck

import (
	"flag"
	"fmt"
	"strings"

	"github.com/egret-stream/egret/api/runner"
)

// ParseArgs parses the topology's own flags (see the ackcheck command)
// out of args and returns the options and the arguments left for Egret.
// The state directory is required unless the binary runs as an instance,
// which reads the options from the submitted definition.
func ParseArgs(name string, args []string) (Options, []string, error) {
	var o Options
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.Name, "name", name, "topology name")
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
	o.Settings = map[string]string{}
	fs.Func("set", "a topology setting KEY=VALUE (repeatable)", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, got %q", v)
		}
		o.Settings[k] = val
		return nil
	})
	own, rest := runner.SplitArgs(args, fs)
	if err := fs.Parse(own); err != nil {
		return o, nil, err
	}
	if o.StateDir == "" && !runner.InContainer(rest) {
		return o, nil, fmt.Errorf("--state DIR is required")
	}
	return o, rest, nil
}
