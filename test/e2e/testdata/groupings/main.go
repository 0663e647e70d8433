// Command groupings is the topology binary of the end-to-end grouping
// tests: it builds one case of package groupingtest, whose tasks record
// what they execute to JSON-lines files, so that test/e2e can run the same
// cases across containers that the in-process runner runs in one process.
//
//	egret submit local ./test/e2e/testdata/groupings -- --case fields --containers 2 --record-dir /tmp/rec
//
// Its own flags (after -- with egret submit):
//
//	--case NAME        the grouping case (required, except in instance mode)
//	--containers N     containers in a cluster (default 2)
//	--record-dir DIR   where the tasks record (topology setting groupingtest.record.dir)
//
// In instance mode the executor passes none of these: the binary then
// builds the components of every case (groupingtest.AllBuilder), and the
// physical plan says which case runs and where it records.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/daemons/instance/inproc/groupingtest"
)

func main() {
	fs := flag.NewFlagSet("groupings", flag.ContinueOnError)
	name := fs.String("case", "", "the grouping case: "+strings.Join(groupingtest.Names(), ", "))
	containers := fs.Int("containers", 2, "containers in a cluster")
	dir := fs.String("record-dir", "", "the directory the tasks record to")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	b, err := builder(*name, *containers, *dir, rest)
	if err != nil {
		fmt.Fprintf(os.Stderr, "groupings: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}

func builder(name string, containers int, dir string, rest []string) (*api.TopologyBuilder, error) {
	if name == "" {
		if runner.InContainer(rest) {
			return groupingtest.AllBuilder(groupingtest.Files{}), nil
		}
		return nil, fmt.Errorf("--case is required (one of %s)", strings.Join(groupingtest.Names(), ", "))
	}
	tc, err := groupingtest.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("--case: %w", err)
	}
	b := tc.Builder(groupingtest.Files{})
	b.SetContainers(containers)
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("--record-dir: %w", err)
		}
		b.SetConfig(groupingtest.KeyRecordDir, abs)
	}
	return b, nil
}
