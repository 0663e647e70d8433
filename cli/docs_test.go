package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/launcher"
)

// docCommand is one egret command line shown in the documentation.
type docCommand struct {
	where string // file:line
	line  string
	// full: from a code block, a whole command (its arguments are checked
	// too); an inline code span in prose may be a fragment ("egret kill").
	full bool
}

var (
	inlineEgret = regexp.MustCompile("`((?:bin/)?egret [^`]+)`")
	placeholder = regexp.MustCompile(`<[^<>]+>`)
	shellSubst  = regexp.MustCompile(`\$\([^)]*\)|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*`)
	upperValue  = regexp.MustCompile(`([:=])[A-Z]\b`)
)

// docCommands extracts the egret command lines of a Markdown file: the
// lines of code blocks that run egret (continuations joined, comments and
// prompts removed) and the inline code spans that start with egret.
func docCommands(t *testing.T, path, rel string) []docCommand {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docCommand
	sc := bufio.NewScanner(f)
	inBlock, tree, n := false, false, 0
	var block []docCommand
	pending, pendingAt := "", 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if inBlock && !tree {
				out = append(out, block...)
			}
			inBlock, block, tree = !inBlock, nil, false
			continue
		}
		if inBlock && strings.ContainsAny(line, "├└│") {
			tree = true // a process tree, not commands
		}
		if !inBlock {
			for _, m := range inlineEgret.FindAllStringSubmatch(line, -1) {
				out = append(out, docCommand{where: rel + ":" + itoa(n), line: m[1]})
			}
			continue
		}
		if pending != "" {
			pending += " " + strings.TrimSpace(line)
		} else {
			l := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
			if !strings.HasPrefix(l, "egret ") && !strings.HasPrefix(l, "bin/egret ") {
				continue
			}
			pending, pendingAt = l, n
		}
		if strings.HasSuffix(pending, "\\") {
			pending = strings.TrimSuffix(pending, "\\")
			continue
		}
		block = append(block, docCommand{where: rel + ":" + itoa(pendingAt), line: pending, full: true})
		pending = ""
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// synopsis tells a usage synopsis (optional parts, alternatives,
// ellipses) from a command line.
func synopsis(line string) bool {
	return strings.ContainsAny(line, "[|…") || strings.Contains(line, "...")
}

// splitCommands cuts a shell line into its egret commands (after ; && |
// and before a comment or a trailing &) and their words.
func splitCommands(line string) [][]string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	line = shellSubst.ReplaceAllString(line, "1")
	line = placeholder.ReplaceAllStringFunc(line, func(p string) string {
		switch p {
		case "<cluster>":
			return "local"
		case "<topology>":
			return "wordcount"
		}
		return "x"
	})
	line = upperValue.ReplaceAllString(line, "${1}4")
	var out [][]string
	for _, part := range regexp.MustCompile(`;|&&`).Split(line, -1) {
		words := shellWords(strings.TrimSuffix(strings.TrimSpace(part), "&"))
		if len(words) > 0 && (words[0] == "egret" || words[0] == "bin/egret") {
			out = append(out, words[1:])
		}
	}
	return out
}

// shellWords splits on blanks, keeping quoted strings whole.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	quote, in := rune(0), false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '\'' || r == '"'):
			quote, in = r, true
		case quote == 0 && (r == ' ' || r == '\t'):
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

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
	var files []string
	files = append(files, filepath.Join(root, "README.md"))
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		for _, dc := range docCommands(t, f, rel) {
			if synopsis(dc.line) {
				continue
			}
			for _, args := range splitCommands(dc.line) {
				r := NewRoot(io.Discard, io.Discard)
				if err := checkDocCommand(r, args, dc.full); err != nil {
					t.Errorf("%s: `egret %s`: %v", dc.where, strings.Join(args, " "), err)
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
