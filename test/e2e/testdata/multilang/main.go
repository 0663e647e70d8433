// Command multilang is the streamparse word count of the end-to-end tests:
// streamparse's WordSpout (resources/spouts/words.py) feeds two tasks of
// streamparse's WordCountBolt (resources/bolts/wordcount.py), run with
// streamparse_run as streamparse runs them under Storm, whose (word, count)
// tuples a Go bolt appends to counts-<task>.log in a state directory.
//
//	egret submit --resources test/e2e/testdata/multilang/resources local ./multilang -- \
//		--state /tmp/wc --python-path ~/.cache/egret/pyvenv/bin
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/core/topology"
)

// keyState is the setting naming the state directory.
const keyState = "wordcount.state.dir"

func main() {
	fs := flag.NewFlagSet("multilang", flag.ContinueOnError)
	name := fs.String("name", "wordcount-py", "topology name")
	state := fs.String("state", "", "directory of the recorded counts")
	pyPath := fs.String("python-path", "", "directory of streamparse_run (a virtualenv's bin): topology.multilang.path")
	containers := fs.Int("containers", 2, "containers in a cluster")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		os.Exit(runner.ExitUsage)
	}
	b := api.NewTopologyBuilder(*name)
	b.SetContainers(*containers)
	if *pyPath != "" {
		b.SetConfig(topology.KeyMultilangPath, *pyPath)
	}
	if *state != "" {
		abs, err := filepath.Abs(*state)
		if err == nil {
			err = os.MkdirAll(abs, 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "multilang: --state:", err)
			os.Exit(runner.ExitUsage)
		}
		b.SetConfig(keyState, abs)
	}
	b.SetShellSpout("words", api.ShellSpout("streamparse_run", "spouts.words.WordSpout").Declare("word"), 1)
	b.SetShellBolt("count", api.ShellBolt("streamparse_run", "bolts.wordcount.WordCountBolt").Declare("word", "count"), 2).
		FieldsGrouping("words", "word")
	b.SetBolt("record", func() api.Bolt { return &recordBolt{} }, 2).FieldsGrouping("count", "word")
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}

// recordBolt appends "<word> <count>" lines to counts-<task>.log.
type recordBolt struct {
	api.BaseBolt
	f    *os.File
	line []byte
}

func (b *recordBolt) Prepare(ctx api.Context, _ api.BoltCollector) error {
	dir := ctx.Config(keyState)
	if dir == "" {
		return fmt.Errorf("%s is not set (--state DIR)", keyState)
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("counts-%d.log", ctx.TaskID())), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	b.f = f
	return err
}

func (b *recordBolt) Execute(t api.Tuple) {
	b.line = append(append(b.line[:0], t.String(0)...), ' ')
	b.line = append(strconv.AppendInt(b.line, t.Int64(1), 10), '\n')
	_, _ = b.f.Write(b.line)
}

func (b *recordBolt) Cleanup() { _ = b.f.Close() }

func (b *recordBolt) DeclareOutputFields(api.OutputDeclarer) {}
