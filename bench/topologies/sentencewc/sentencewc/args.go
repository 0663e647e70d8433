package sentencewc

import (
	"flag"

	"github.com/egret-stream/egret/api/runner"
)

// ParseArgs parses the topology's own flags (see the sentencewc command)
// out of args and returns the options and the arguments left for Egret.
func ParseArgs(args []string) (Options, []string, error) {
	var o Options
	fs := flag.NewFlagSet("sentencewc", flag.ContinueOnError)
	fs.IntVar(&o.Spouts, "spouts", 1, "spout parallelism")
	fs.IntVar(&o.Splits, "splits", 1, "split bolt parallelism")
	fs.IntVar(&o.Counts, "counts", 1, "count bolt parallelism")
	fs.IntVar(&o.Containers, "containers", 1, "containers")
	fs.BoolVar(&o.Acking, "acking", false, "at-least-once")
	fs.IntVar(&o.MaxPending, "max-pending", 0, "topology.max.spout.pending with --acking (0: the runtime's default)")
	fs.DurationVar(&o.CheckpointInterval, "checkpoint-interval", 0, "effectively-once with this checkpoint interval (0: not)")
	fs.Float64Var(&o.Rate, "rate", 0, "offered sentences per second of all spout tasks (0: unthrottled)")
	fs.StringVar(&o.LatencyDir, "latency-dir", "", "directory of the latency recorders' files (with --rate)")
	fs.StringVar(&o.ContainerMode, "container-mode", "", "topology.container.mode (default: the runtime's, process-per-instance)")
	fs.StringVar(&o.PythonPath, "python-path", "", "topology.multilang.path of a Python split bolt (a virtualenv's bin)")
	own, rest := runner.SplitArgs(args, fs)
	return o, rest, fs.Parse(own)
}
