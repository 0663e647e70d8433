package doccmd

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Command is one egret command line shown in the documentation.
type Command struct {
	// Where is file:line.
	Where string
	Line  string
	// Full: from a code block, a whole command (its arguments can be
	// checked too); an inline code span in prose may be a fragment
	// ("egret kill").
	Full bool
}

var (
	inlineEgret = regexp.MustCompile("`((?:bin/)?egret [^`]+)`")
	placeholder = regexp.MustCompile(`<[^<>]+>`)
	shellSubst  = regexp.MustCompile(`\$\([^)]*\)|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*`)
	upperValue  = regexp.MustCompile(`([:=])[A-Z]\b`)
	separators  = regexp.MustCompile(`;|&&|\|\|`)
)

// Files returns README.md and every Markdown file under docs/ of the
// repository at root.
func Files(root string) ([]string, error) {
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	return files, err
}

// Commands extracts the egret command lines of the Markdown file at path
// (named rel in Where): the lines of code blocks that run egret
// (continuations joined, prompts removed; process trees left out) and the
// inline code spans that start with egret.
func Commands(path, rel string) ([]Command, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Command
	sc := bufio.NewScanner(f)
	inBlock, tree, n := false, false, 0
	var block []Command
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
				out = append(out, Command{Where: rel + ":" + strconv.Itoa(n), Line: m[1]})
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
		block = append(block, Command{Where: rel + ":" + strconv.Itoa(pendingAt), Line: pending, Full: true})
		pending = ""
	}
	return out, sc.Err()
}

// Synopsis tells a usage synopsis (optional parts, alternatives,
// ellipses) from a command line.
func Synopsis(line string) bool {
	return strings.ContainsAny(line, "[|…") || strings.Contains(line, "...")
}

// Split cuts a shell line into its egret commands (after ; && || and
// before a comment, a redirection, a pipe or a trailing &) and returns
// the arguments of each (the words after egret). Shell substitutions
// become 1, placeholders sample values (<cluster>: local, <topology>:
// wordcount, others x), and an upper-case letter after : or = (c=N) 4.
func Split(line string) [][]string {
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
	for _, part := range separators.Split(line, -1) {
		words := shellWords(strings.TrimSuffix(strings.TrimSpace(part), "&"))
		for i, w := range words {
			if w == "|" || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "<") {
				words = words[:i]
				break
			}
		}
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

// Block returns the lines of the code block of the Markdown file at path
// whose first line starts with first, to run as written: continuation
// lines joined, blank and comment lines left out.
func Block(path, first string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var block []string
	in, pending := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "```") {
			if in && len(block) > 0 && strings.HasPrefix(block[0], first) {
				return block, nil
			}
			in, block = !in, nil
			continue
		}
		if !in || pending == "" && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			pending += strings.TrimSuffix(l, "\\")
			continue
		}
		block, pending = append(block, pending+l), ""
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no code block starting with %q", first)
}
