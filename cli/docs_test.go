package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/internal/doccmd"
	"github.com/egret-stream/egret/launcher"
)

// checkDocCommand parses args as the egret CLI does, without running the
// command: the subcommand must exist, its flags parse (types included),
// the values of flags with a syntax of their own parse, and a whole
// command line has the arguments its command accepts.
func checkDocCommand(root *cobra.Command, args []string, full bool) error {
	cmd, rest, err := root.Find(args)
	if err != nil && !full {
		return nil // prose quoting something else (a job comment)
	}
	if err != nil {
		return err
	}
	if cmd == root {
		return fmt.Errorf("no egret command in %q", strings.Join(args, " "))
	}
	if !cmd.Runnable() {
		return nil // a command group named in prose ("egret config")
	}
	c := cmd
	c.InitDefaultHelpFlag()
	if err := c.ParseFlags(rest); err != nil {
		if !full && strings.Contains(err.Error(), "flag needs an argument") {
			return nil // prose naming a flag ("egret update --runtime-config")
		}
		return err
	}
	for _, check := range []struct {
		flag  string
		parse func([]string) error
	}{
		{"component-parallelism", func(v []string) error { _, err := launcher.ParseParallelism(v); return err }},
		{"runtime-config", func(v []string) error { _, err := launcher.ParseKeyValues("--runtime-config", v); return err }},
		{"config-property", func(v []string) error { _, err := launcher.ParseKeyValues("--config-property", v); return err }},
	} {
		f := c.Flags().Lookup(check.flag)
		if f == nil || !f.Changed {
			continue
		}
		vals, err := c.Flags().GetStringArray(check.flag)
		if err != nil {
			continue
		}
		if err := check.parse(vals); err != nil {
			return err
		}
	}
	if full && c.Args != nil {
		positional := c.Flags().Args()
		if dash := c.ArgsLenAtDash(); dash >= 0 {
			positional = positional[:dash]
		}
		if err := c.Args(c, positional); err != nil {
			return err
		}
	}
	return nil
}

// TestDocCommandLines: every egret command line that README.md and docs/
// show parses as the CLI parses it (subcommand, flags and their values,
// and the arguments of a whole command line). Usage synopses (with
// [optional] parts, alternatives or ellipses) are left out; placeholders
// (<cluster>, N) are replaced by sample values.
func TestDocCommandLines(t *testing.T) {
	root := filepath.Join("..")
	files, err := doccmd.Files(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		cmds, err := doccmd.Commands(f, rel)
		if err != nil {
			t.Fatal(err)
		}
		for _, dc := range cmds {
			if doccmd.Synopsis(dc.Line) {
				continue
			}
			for _, args := range doccmd.Split(dc.Line) {
				r := NewRoot(io.Discard, io.Discard)
				if err := checkDocCommand(r, args, dc.Full); err != nil {
					t.Errorf("%s: `egret %s`: %v", dc.Where, strings.Join(args, " "), err)
				}
				checked++
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d command lines found in the docs", checked)
	}
	t.Logf("%d egret command lines of the docs parse", checked)
}

// TestDocClusterList: cli.md's list of the embedded clusters names every
// cluster of conf/clusters.
func TestDocClusterList(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`the embedded ones \(([^)]*)\)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("cli.md does not list the embedded clusters")
	}
	dirs, err := os.ReadDir(filepath.Join("..", "conf", "clusters"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && !strings.Contains(string(m[1]), "`"+d.Name()+"`") {
			t.Errorf("cli.md's list of the embedded clusters (%s) lacks %s", m[1], d.Name())
		}
	}
}
